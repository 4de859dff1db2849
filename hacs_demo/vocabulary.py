"""Names the demo's authors, universities, papers and courses are made of.

The lists are small on purpose: real seed lists repeat surnames and universities, so two
authors can share a department host and HACS must keep their ``/~user/`` directories apart.
Every name is Latin-1 encodable because a quarter of the sites are served as ISO-8859-1.
"""

from __future__ import annotations

import unicodedata

FIRST_NAMES = (
    "Alice", "Bruno", "Chen", "Dana", "Elena", "Farid", "Grace", "Hiro", "Ines", "José",
    "Karin", "Luis", "Maya", "Nikhil", "Olga", "Pierre", "Qing", "Rosa", "Sven", "Tariq",
    "Ursula", "Victor", "Wei", "Ximena", "Yusuf", "Zoë", "Anders", "Björn", "Chloé", "Dmitri",
    "Emeka", "François", "Gustavo", "Hana", "Ivan", "Jürgen", "Kofi", "Leila", "Marco", "Noor",
    "Oscar", "Priya", "Rahul", "Søren", "Tomás", "Uma", "Vera", "Wen", "Yara", "Zeynep",
)  # fmt: skip
LAST_NAMES = (
    "Smith", "Nguyen", "García", "Müller", "Okafor", "Tanaka", "Kowalski", "Rossi", "Larsen",
    "Haddad", "Fischer", "Silva", "Chen", "Patel", "Ivanova", "Dubois", "Kim", "Novak", "Berg",
    "Moreau", "Santos", "Yilmaz", "Hansen", "Lopez", "Schmidt", "Wang", "Jensen", "Costa",
    "Nakamura", "Ahmed", "Olsen", "Peters", "Romero", "Sato", "Weber", "Zhang", "Brennan",
    "Castillo", "Dahl", "Eriksen", "Ferreira", "Gómez", "Hoffmann", "Iyer", "Jovanovic",
    "Kraus", "Lindqvist", "Mendes", "Nielsen", "Ortiz",
)  # fmt: skip
UNIVERSITIES = (
    "odu", "mit", "stanford", "cmu", "umd", "ucsd", "gatech", "utexas", "wisc", "umich",
    "uiuc", "purdue", "cornell", "rutgers", "vt", "ncsu", "uga", "unc", "uci", "utah",
    "colorado", "virginia", "pitt", "rice", "nyu", "bu", "umass", "psu", "osu", "iastate",
)  # fmt: skip
# Computer science most often, so hosts repeat: cs.<uni>.edu.
DEPARTMENTS = ("cs", "cs", "cs", "cse", "eecs", "cis", "ics")
TOPICS = (
    "digital libraries", "web archiving", "information retrieval", "databases",
    "machine learning", "networks", "security", "hci", "nlp", "systems", "theory", "graphics",
)  # fmt: skip
VENUES = (
    "JCDL", "TPDL", "WWW", "SIGIR", "CIKM", "KDD", "VLDB", "SIGMOD", "ICDE", "WSDM", "ACL",
    "EMNLP", "NeurIPS", "ICML", "CHI", "USENIX Security", "NSDI", "SOSP", "iPRES", "Hypertext",
)  # fmt: skip
TITLE_WORDS = (
    "scalable", "temporal", "archival", "efficient", "robust", "adaptive", "learning",
    "crawling", "index", "graph", "queries", "memento", "provenance", "citation", "ranking",
    "detection", "change", "freshness", "web", "scholarly", "link", "rot", "drift", "models",
    "estimation", "sampling", "streams", "privacy", "embeddings", "evaluation", "towards",
    "revisiting", "understanding", "characterizing", "large-scale", "distributed",
)  # fmt: skip
COURSE_TOPICS = (
    "Introduction", "Recursion", "Hashing", "Trees", "Graphs", "Sorting", "Dynamic Programming",
    "Transactions", "Indexing", "Crawling", "Ranking", "Review", "Concurrency", "Networking",
)  # fmt: skip
PROJECTS = ("crawler", "memento", "linkrot", "scholar", "graphdb", "webviz")
SERVERS = (
    "Apache/2.2.15 (CentOS)", "Apache/2.4.7 (Ubuntu)", "nginx/1.10.3", "Apache",
    "Microsoft-IIS/7.5",
)  # fmt: skip


def ascii_fold(text: str) -> str:
    """``text`` without its accents: user names and file names are plain ASCII ("jmuller")."""
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
