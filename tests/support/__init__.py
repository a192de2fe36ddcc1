"""What the tests share, one module per purpose. Test modules import from here (fixtures live in
the conftest.py files); no module imports a test module (tests/test_house_tests.py holds the rule).

The service: ``live`` (the app on a real socket, on SQLite or PostgreSQL), ``served`` (``hearth
serve`` as its own process), ``databases`` (``in_db`` and PostgreSQL databases of a test's own;
``postgres`` makes them, for the benches too),
``redis_server``, ``polling`` (``eventually``), ``listings`` (page after page), ``openapi``
(responses checked against the document), ``metrics``.
Who calls it: ``agents`` (keys, registration, root proofs), ``identities`` (mnemonic keys),
``memories``, ``elevation``, ``runtimes``, ``bridge``, ``think`` (cycles against ``fake_llm``),
``wake``, ``cli_homes`` (the CLI in a home of its own).
ADDS and blocks: ``adds_cases`` (named valid and invalid documents), ``adds_strategies``
(Hypothesis), ``adds_objects``, ``manifests``, ``blocks``, ``doc_codes``; ``external_suites``
finds the outside test suites.
"""
