"""The pages of HACS, one module per page (templates/dashboard/<page>.html)."""
