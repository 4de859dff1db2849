"""The formats HACS reads: URLs in SURT form, CDX indexes, HTML links, seed lists, WARC files."""
