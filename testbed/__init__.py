"""Tools that stand in for the world outside HACS, for its tests and its benches alike: a fake
Internet Archive CDX and Wayback server (``ia_server``), a real pywb serving generated WARC files
(``pywb``), a fake Browsertrix API (``browsertrix_server``), crawl files as crawlers write them
(``crawls``) and the demo archive's observation tables (``demo_tables``). None of it is part of
the product HACS runs."""
