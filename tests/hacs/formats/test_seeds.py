"""hacs.formats.seeds: every bad line of a seed list explained, good lines kept, duplicates merged.

Storing the parsed list (``archive.seeds``: nothing stored is lost) is tested in
``tests/test_seeds.py``.
"""

from __future__ import annotations

import pytest

from hacs.formats.seeds import SeedFileError, parse_seed_list, seed_keys_refreshed, split_tags

CSV = (
    "url,author,tags\n"
    "http://www.cs.uni.edu/~ada/,Ada Lovelace,ml;theory\n"
    "https://cs.uni.edu/~ada/index.html,Ada L.,\n"
    "ftp://cs.uni.edu/~bob/,Bob,\n"
    ",Nobody,\n"
    "http://cs.uni.edu/~carl,Carl Gauss,math\n"
    "http://localhost/~x,Local,\n"
)


def test_csv_lines_are_checked_one_by_one() -> None:
    result = parse_seed_list(CSV.encode())
    assert result.format == "csv"
    assert [(r.line, r.author) for r in result.rows] == [(2, "Ada Lovelace"), (6, "Carl Gauss")]
    assert result.rows[0].tags == ("ml", "theory")
    assert [(m.line, m.into_line) for m in result.merged] == [(3, 2)]
    reasons = {r.line: r.reason for r in result.rejected}
    assert set(reasons) == {4, 5, 7}
    assert "only http and https" in reasons[4]
    assert "empty" in reasons[5]
    assert "no domain" in reasons[7]


def test_a_plain_list_takes_one_url_per_line_and_skips_comments() -> None:
    text = "# my seeds\nhttp://a.edu/~x/\n\n  b.edu/~y  \nnot a url at all\n"
    result = parse_seed_list(text.encode())
    assert result.format == "text"
    assert [(r.line, r.key) for r in result.rows] == [(2, "edu,a)/~x"), (4, "edu,b)/~y")]
    assert [r.line for r in result.rejected] == [5]


def test_user_directory_filter_follows_the_paper() -> None:
    result = parse_seed_list(
        b"http://a.edu/~x/\nhttp://a.edu/people/y/\n", user_directories_only=True
    )
    assert [r.key for r in result.rows] == ["edu,a)/~x"]
    assert "user-directory" in result.rejected[0].reason


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "empty"),
        (b"  \n\n", "empty"),
        (b"url,author\n\xff\xfebad\n", "not UTF-8 text (byte 0xff on line 2)"),
        (b"name,author\nx,y\n", "has no 'url' column"),
        (b"a\x00b", "NUL bytes"),
    ],
)
def test_unreadable_files_get_a_clear_message(data: bytes, message: str) -> None:
    with pytest.raises(SeedFileError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_seed_list(data)


def test_size_and_line_limits_are_explained() -> None:
    with pytest.raises(SeedFileError, match="the limit is 100"):
        parse_seed_list(b"http://a.edu/~x\n" * 20, max_bytes=100)
    with pytest.raises(SeedFileError, match="limit is 5 seeds"):
        parse_seed_list(b"http://a.edu/~x\n" * 10, max_lines=5)


def test_a_utf8_bom_from_a_spreadsheet_is_accepted() -> None:
    result = parse_seed_list("\ufeffurl,author\nhttp://a.edu/~é/,Émile\n".encode())
    assert result.rows[0].author == "Émile"


def test_the_seed_limit_counts_seeds_not_headers_comments_or_blank_lines() -> None:
    five = "".join(f"http://a.edu/~u{n}/\n" for n in range(5))
    assert len(parse_seed_list(f"# mine\n\n{five}\n".encode(), max_lines=5).rows) == 5
    assert len(parse_seed_list(f"url\n{five}".encode(), max_lines=5).rows) == 5
    with pytest.raises(SeedFileError, match="The list has 6 seeds; the limit is 5 seeds"):
        parse_seed_list(f"url\n{five}http://a.edu/~u5/\n".encode(), max_lines=5)
    with pytest.raises(SeedFileError, match="The list has 6 seeds"):
        parse_seed_list(f"{five}http://a.edu/~u5/\n".encode(), max_lines=5)


def test_a_url_too_long_for_its_column_once_tidied_is_a_rejected_line() -> None:
    # 18 characters as typed; each é becomes %C3%A9, so 33 once tidied.
    text = "http://a.edu/~ééé/\nhttp://a.edu/~abc/\n"
    result = parse_seed_list(text.encode(), max_url_length=30)
    assert [r.url for r in result.rows] == ["http://a.edu/~abc/"]
    assert [(r.line, r.reason) for r in result.rejected] == [
        (
            1,
            "the URL is too long once tidied (33 characters, non-ASCII characters "
            "percent-encoded; the limit is 30)",
        )
    ]
    keyed = parse_seed_list(text.encode(), max_key_length=10)
    assert {r.line: r.reason for r in keyed.rejected}[2] == (
        "the URL's canonical key is too long (11 characters; the limit is 10)"
    )


def test_pasted_text_with_a_nul_is_refused_like_a_file() -> None:
    with pytest.raises(SeedFileError, match="NUL bytes"):
        parse_seed_list("http://a.edu/~x/\x00\n")


def test_paths_differing_in_case_are_two_sites_and_hosts_are_not() -> None:
    text = (
        "http://cs.uni.edu/~Alice/\n"
        "http://cs.uni.edu/~alice/\n"
        "http://CS.UNI.EDU/~alice/index.html\n"
        "http://cs.uni.edu/~dmitri/home.html\n"
        "https://www.cs.uni.edu/~dmitri/\n"
    )
    result = parse_seed_list(text.encode())
    assert [(r.line, r.key) for r in result.rows] == [
        (1, "edu,uni,cs)/~Alice"),
        (2, "edu,uni,cs)/~alice"),
        (4, "edu,uni,cs)/~dmitri"),
    ]
    assert [(m.line, m.into_line) for m in result.merged] == [(3, 2), (5, 4)]
    assert result.rows[2].url == "http://cs.uni.edu/~dmitri/home.html"  # as the librarian wrote


def test_a_line_that_is_no_url_is_rejected_as_not_a_url_with_its_line() -> None:
    result = parse_seed_list(b"http://a.edu/~x/\nnot a url at all\n")
    [rejected] = result.rejected
    assert (rejected.line, rejected.text) == (2, "not a url at all")
    assert rejected.reason.startswith("not a URL")


def test_tags_are_split_as_the_csv_splits_them() -> None:
    result = parse_seed_list(b'url,tags\nhttp://a.edu/~x/,ml;theory|ml\nhttp://a.edu/~y/,"a, b"\n')
    assert [r.tags for r in result.rows] == [("ml", "theory"), ("a", "b")]
    assert split_tags(" computer science; 2026 intake ;;") == ("computer science", "2026 intake")
    assert split_tags("a, b | c") == ("a", "b", "c")
    assert split_tags("x" * 150) == ("x" * 150,)  # a form says it is too long; nothing is cut


def test_stored_keys_are_refreshed_without_merging_two_sites() -> None:
    stored = [
        (1, "edu,foo)/~alice", "http://foo.edu/~Alice/"),  # old rule: path lower-cased
        (2, "edu,foo)/~dmitri/home.html", "http://foo.edu/~dmitri/home.html"),
        (3, "edu,foo)/~dmitri", "http://foo.edu/~dmitri/"),  # already holds the new key
        (4, "edu,foo)/~bob/home.html", "http://foo.edu/~bob/home.html"),
        (5, "edu,foo)/~bob", "http://foo.edu/~Bob/"),  # frees edu,foo)/~bob for site 4
        (6, "edu,foo)/~carl", "http://foo.edu/~carl"),  # unchanged
    ]
    changes = seed_keys_refreshed(stored)
    assert changes == {1: "edu,foo)/~Alice", 4: "edu,foo)/~bob", 5: "edu,foo)/~Bob"}
    final = {pk: changes.get(pk, key) for pk, key, _url in stored}
    assert len(set(final.values())) == len(stored)  # still one key per site
    assert seed_keys_refreshed([(pk, final[pk], url) for pk, _key, url in stored]) == {}
