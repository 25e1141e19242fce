"""Global Issue Memory (GIM): a shared memory of resolved errors and verified fixes, as a tool pack.

Tools (API reference rev 2): ``gim_search_issues``, ``gim_get_fix_bundle`` (scope ``gim:read``),
``gim_submit_issue``, ``gim_confirm_fix``, ``gim_report_usage`` (scope ``gim:write``); resources ``gim://stats``
and ``gim://issues/{issue_id}/stats``; the command ``gateway gim stats``; ``gateway reindex`` through
:class:`gateway.api.Reindexable`.

Where things are:

* :mod:`.signatures` — error normalisation (paths, line numbers, versions, addresses, timestamps, placeholders).
* :mod:`.intake`, :mod:`.texts` — sanitisation of every stored field, and what is embedded and indexed.
* :mod:`.submit`, :mod:`.dedup` — the duplicate decision and the pending -> vectors -> active write protocol.
* :mod:`.search`, :mod:`.ranking`, :mod:`.lexical` — hybrid retrieval (dense + BM25), grouping, ranking.
* :mod:`.confidence`, :mod:`.feedback` — Bayesian confidence from one vote per identity; fix bundles; usage.
* :mod:`.consistency`, :mod:`.locks`, :mod:`.reindex`, :mod:`.bulk` — crash recovery, serialisation, re-embedding.
* :mod:`.repository`, :mod:`.migrations`, :mod:`.vectors` — the relational schema and the vector collections.

Strategies (``[plugins.gim] strategy``): ``hybrid`` (default) and ``baseline`` (the public GIM algorithm, kept as
a measurable reference); see :mod:`.config`. ``bench/gim_eval.py`` measures both on the evaluation set.
"""
