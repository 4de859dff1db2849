"""Link extraction speed: pages per second on synthetic ~30 KB scholarly homepages, one core.

Run from the project root: ``.venv/bin/python -m bench.links [--pages N]``. Goal: >= 500
pages/s.

Two figures are printed:

* cold -- every page has its own links and the canonicalisation cache is emptied before each
  page, so nothing is reused between pages (the goal applies to this one);
* history -- successive versions of a few homepages, each adding a couple of publications, as
  when a site's captures are parsed one after the other (what an import does).
"""

from __future__ import annotations

import random
import statistics
import time

from bench.common import argument_parser
from hacs.formats.canon import clear_caches
from hacs.formats.links import extract_links

GOAL_PAGES_PER_SECOND = 500
VENUES = ["SIGIR", "JCDL", "WWW", "CIKM", "TPDL", "KDD", "ACL", "EMNLP", "ICWSM", "iConference"]
WORDS = (
    "web archive crawl scheduling temporal link analysis scholarly communication digital library "
    "memento timemap revisit freshness estimation poisson process maximum likelihood change rate"
).split()


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def _publication(rng: random.Random, author: str, serial: int) -> str:
    year = 2005 + serial % 20
    venue = rng.choice(VENUES)
    doi = f"10.{1000 + serial % 9000}/{venue.lower()}.{year}.{serial:05d}"
    coauthors = ", ".join(
        f'<a href="http://www.cs.example{rng.randrange(40)}.edu/~coauthor{rng.randrange(500)}/">'
        f"Coauthor {rng.randrange(500)}</a>"
        for _ in range(rng.randrange(1, 4))
    )
    return (
        f'<li id="pub{serial}"><span class="title">{_sentence(rng, 8)}</span> {coauthors}, '
        f"{author}. <em>Proceedings of {venue} {year}</em>, pp. {rng.randrange(1, 400)}-"
        f"{rng.randrange(400, 800)}.\n"
        f'  [<a href="papers/{venue.lower()}{year}-{serial}.pdf">PDF</a>] '
        f'[<a href="https://doi.org/{doi}">DOI</a>] '
        f'[<a href="bib/{serial}.bib">BibTeX</a>] '
        f'[<a href="#pub{serial}">link</a>] '
        f'[<a href="https://github.com/{author.lower()}/project{serial}">code</a>]</li>\n'
    )


def homepage(rng: random.Random, author: str, publications: list[int], size: int = 30_000) -> str:
    """A homepage in the style of a researcher's hand-made page, about ``size`` characters."""
    head = (
        "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
        f"<title>{author}'s Homepage</title>"
        '<link rel="stylesheet" href="style.css"><script>var _gaq=[];</script></head>\n'
        f'<body><div id="nav"><a href="./">Home</a> | <a href="publications.html">Publications'
        '</a> | <a href="teaching/">Teaching</a> | <a href="students.html">Students</a> | '
        f'<a href="cv.pdf">CV</a> | <a href="mailto:{author.lower()}@cs.example.edu">Email</a>'
        f' | <a href="javascript:toggle()">More</a></div>\n<h1>{author}</h1>\n'
        f'<p><img src="photo.jpg" alt="{author}"> {_sentence(rng, 40)}</p>\n'
        "<h2>News</h2><ul>\n"
    )
    parts = [head]
    for _ in range(8):
        parts.append(
            f'<li>{_sentence(rng, 12)} <a href="news/{rng.randrange(10_000)}.html">more</a></li>\n'
        )
    parts.append('</ul><h2 id="pubs">Publications</h2><ol>\n')
    used = sum(map(len, parts))
    for serial in publications:
        parts.append(_publication(rng, author, serial))
        used += len(parts[-1])
        if used > size - 1500:
            break
    parts.append(
        "</ol><h2>Teaching</h2><table><tr><td>"
        '<a href="teaching/cs432/">CS 432/532 Web Science</a></td><td>Fall</td></tr>'
        '<tr><td><a href="teaching/cs725/">CS 725/825 Information Visualization</a></td>'
        "<td>Spring</td></tr></table>\n"
        f'<map name="m"><area shape="rect" coords="0,0,10,10" href="/~{author.lower()}/map.html">'
        "</map>\n"
        f'<p id="footer">Last modified {rng.randrange(1, 28)} March. <a href="#top">Top</a> '
        '<a href="http://www.cs.example.edu/">Department</a></p></body></html>\n'
    )
    return "".join(parts)


def _rate(pages: list[str], base: str, *, cold: bool) -> tuple[float, int]:
    links = 0
    start = time.perf_counter()
    for page in pages:
        if cold:
            clear_caches()
        links += len(extract_links(page, base))
    return len(pages) / (time.perf_counter() - start), links


def main() -> None:
    parser = argument_parser(__doc__)
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rng = random.Random(20240601)
    base = "http://www.cs.example.edu/~author/"

    # Cold: every page its own publications (serials never repeat across pages).
    cold_pages = [
        homepage(rng, f"Author{i}", list(range(i * 1000, i * 1000 + 200)))
        for i in range(args.pages)
    ]
    # History: 10 homepages, each in args.pages // 10 successive versions; version v lists the
    # publications 0..(40 + 2v), newest first, so each version adds two.
    history_pages = []
    for author in range(10):
        for version in range(args.pages // 10):
            newest = 40 + 2 * version
            pubs = list(range(author * 100_000 + newest, author * 100_000 - 1, -1))
            history_pages.append(homepage(random.Random(author), f"Author{author}", pubs))

    size = statistics.mean(len(p) for p in cold_pages)
    cold = [_rate(cold_pages, base, cold=True) for _ in range(args.repeats)]
    clear_caches()
    warm = [_rate(history_pages, base, cold=False) for _ in range(args.repeats)]
    cold_rate = max(r for r, _ in cold)
    warm_rate = max(r for r, _ in warm)
    print(f"pages: {len(cold_pages)} of {size / 1000:.1f} KB on average, one core")
    print(f"links per page (cold set): {cold[0][1] / len(cold_pages):.0f}")
    print(f"cold:    {cold_rate:,.0f} pages/s (best of {args.repeats})")
    print(f"history: {warm_rate:,.0f} pages/s (best of {args.repeats})")
    verdict = "meets" if cold_rate >= GOAL_PAGES_PER_SECOND else "MISSES"
    print(f"goal {GOAL_PAGES_PER_SECOND} pages/s: cold figure {verdict} it")


if __name__ == "__main__":
    main()
