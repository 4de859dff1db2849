"""Learned crawl schedulers, trained on a collection's own update history.

* GP4C (``hacs.learning.gp4c``): a score function evolved by genetic programming over the GP4C
  paper's terminals and HACS's estimates.
* LWS (:mod:`hacs.learning.lws`): the list-wise forum crawling paper's regression of the time to
  a site's next update from its recent intervals, ranking sites by the updates expected since
  their newest copy.

Pure code (NumPy, SciPy, scikit-learn); the Django apps train, store and use the models.
"""
