"""The vetoes of the duplicate decision (:mod:`gateway_plugins.gim.agreement`) and how the decision applies them,
on realistic look-alike reports (must stay apart) and reworded duplicates (must not be vetoed)."""

from __future__ import annotations

from gateway_plugins.gim.agreement import conflicts
from gateway_plugins.gim.dedup import decide_hybrid, gather_evidence
from gateway_plugins.gim.evidence import extract_facts
from tests.plugins.gim.test_dedup_evidence import FLASK_TRACE, fix

FLASK_CAUSE = "Werkzeug 3.0 removed url_quote, which Flask 2.2 imports; pin Werkzeug<3 or upgrade Flask."
FLASK_FIX = fix(("downgrade", 'pip install "Werkzeug<3.0"', "keep url_quote for Flask 2.2"))
LOGIN_TRACE = (
    '  File "/venv/lib/python3.11/site-packages/flask_login/utils.py", line 14, in <module>\n'
    "    from werkzeug.urls import url_decode\n"
    "ImportError: cannot import name 'url_decode' from 'werkzeug.urls' "
    "(/venv/lib/python3.11/site-packages/werkzeug/urls.py)"
)
LOGIN_CAUSE = "Flask-Login 0.6.2 imports werkzeug.urls.url_decode, removed in Werkzeug 3.0; Flask-Login 0.6.3 fixed it."
LOGIN_FIX = fix(("upgrade", 'pip install -U "Flask-Login>=0.6.3"', "no longer imports url_decode"))


def checks(found: list) -> list[str]:
    return [c.check for c in found]


def test_same_template_with_a_different_explained_name_is_a_failure_conflict() -> None:
    login = extract_facts(LOGIN_TRACE, LOGIN_CAUSE, LOGIN_FIX)
    flask = extract_facts(FLASK_TRACE, FLASK_CAUSE, FLASK_FIX)
    found = conflicts(login, flask)
    assert checks(found)[0] == "failure"
    assert "url_decode" in found[0].detail and "url_quote" in found[0].detail


def test_a_different_value_that_the_master_also_names_is_not_a_conflict() -> None:
    cause = "NumPy 1.24 removed the aliases np.float, np.int and np.bool; code using them crashes."
    numpy_fix = fix(("downgrade", 'pip install "numpy<1.24"', "keep the aliases"))
    master = extract_facts("AttributeError: module 'numpy' has no attribute 'float'", cause, numpy_fix)
    report = extract_facts(
        "AttributeError: module 'numpy' has no attribute 'int'",
        "As of numpy 1.24 np.int and np.float are gone, so legacy code referencing them errors out.",
        numpy_fix,
    )
    assert conflicts(report, master) == []


def test_an_incidental_value_that_no_root_cause_explains_is_not_a_conflict() -> None:
    cause = "The installed transformers release predates the model's architecture; upgrade transformers."
    upgrade = fix(("upgrade", "pip install -U transformers", "newer releases know the architecture"))
    template = (
        "ValueError: The checkpoint you are trying to load has model type `{}` but Transformers does not "
        "recognize this architecture."
    )
    master = extract_facts(template.format("mistral"), cause, upgrade)
    report = extract_facts(template.format("qwen2"), "transformers is older than the model family.", upgrade)
    assert conflicts(report, master) == []


def test_a_matching_line_among_the_masters_items_clears_the_failure_check() -> None:
    login = extract_facts(LOGIN_TRACE, LOGIN_CAUSE, LOGIN_FIX)
    flask = extract_facts(FLASK_TRACE, FLASK_CAUSE, FLASK_FIX)
    child = extract_facts(LOGIN_TRACE.replace("3.11", "3.12"), "", None)
    assert "failure" not in checks(conflicts(login, flask.merged_with(child)))


def test_opposite_version_moves_of_one_package_conflict() -> None:
    newer_gpu = extract_facts(
        "RuntimeError: CUDA error: no kernel image is available for execution on the device",
        "The torch build (cu102) has no kernels for the RTX 3080 (sm_86); install a CUDA 11+ build.",
        fix(("upgrade", "pip install -U torch --index-url https://download.pytorch.org/whl/cu121", "sm_86 kernels")),
    )
    older_gpu = extract_facts(
        "RuntimeError: CUDA error: no kernel image is available for execution on the device",
        "The Tesla K80 (sm_37) is too old for current PyTorch binaries.",
        fix(("downgrade", "pip install torch==1.12.1+cu113", "last binaries with sm_37 kernels")),
    )
    found = conflicts(older_gpu, newer_gpu)
    assert checks(found) == ["direction"] and found[0].detail == "torch: down vs up"


def test_a_fix_that_moves_a_package_both_ways_does_not_conflict() -> None:
    both = extract_facts(
        "",
        "",
        fix(
            ("downgrade", 'pip install "Werkzeug<3.0"', "keep url_quote"),
            ("upgrade", 'pip install -U "Werkzeug>=3" "Flask>=3"', "or move everything forward"),
        ),
    )
    flask = extract_facts(FLASK_TRACE, FLASK_CAUSE, FLASK_FIX)
    assert "direction" not in checks(conflicts(both, flask))


def test_fixes_about_disjoint_packages_are_a_subject_conflict() -> None:
    error = "AttributeError: 'str' object has no attribute 'decode'"
    jwt = extract_facts(
        error,
        "PyJWT 2.0 changed jwt.encode() to return str instead of bytes.",
        fix(("downgrade", 'pip install "PyJWT<2"', "bytes tokens")),
    )
    h5py = extract_facts(
        error,
        "h5py 3.0 returns HDF5 string attributes as str; old Keras calls .decode on them.",
        fix(("downgrade", 'pip install "h5py<3.0"', "bytes attributes")),
    )
    found = conflicts(h5py, jwt)
    assert checks(found) == ["subject"]
    no_packages = extract_facts(error, "Some library now returns str.", None)
    assert conflicts(no_packages, jwt) == []  # nothing known on one side: no verdict


def test_a_traced_library_the_master_never_mentions_is_a_component_conflict_one_way() -> None:
    master = extract_facts(
        "sqlalchemy.exc.ObjectNotExecutableError: Not an executable object: 'SELECT count(*) FROM orders'",
        "SQLAlchemy 2.0 needs text() around raw SQL strings in the application's own code.",
        fix(("command", "conn.execute(text(sql))", "declare textual SQL")),
    )
    pandas = extract_facts(
        '  File "/venv/lib/python3.10/site-packages/pandas/io/sql.py", line 1405, in execute\n'
        "sqlalchemy.exc.ObjectNotExecutableError: Not an executable object: 'SELECT * FROM orders'",
        "pandas < 2.0 executes strings with the SQLAlchemy 1.x API internally; upgrade pandas.",
        fix(("upgrade", 'pip install -U "pandas>=2.0"', "pandas 2 supports SQLAlchemy 2")),
    )
    assert checks(conflicts(pandas, master)) == ["component"]
    assert "component" not in checks(conflicts(master, pandas))  # a bare report may join a master with a trace


def test_decision_skips_a_vetoed_master_and_takes_the_next() -> None:
    evidence = gather_evidence(
        error_hits=[("m1", 0.95, "i1"), ("m2", 0.80, "m2")],
        lexical_hits=[("m1", 0.9, "c1")],
        resolution_hits=[("m1", 0.90), ("m2", 0.78)],
        is_active={"m1", "m2"}.__contains__,
    )
    assert evidence["m1"].item_ids == {"i1", "c1"}
    login = extract_facts(LOGIN_TRACE, LOGIN_CAUSE, LOGIN_FIX)
    evidence["m1"].conflicts = tuple(conflicts(login, extract_facts(FLASK_TRACE, FLASK_CAUSE, FLASK_FIX)))
    chosen = decide_hybrid(evidence, exception_type=None, error_threshold=0.5, resolution_threshold=0.7)
    assert chosen is not None and chosen.master_id == "m2"
    evidence["m2"].conflicts = evidence["m1"].conflicts
    assert decide_hybrid(evidence, exception_type=None, error_threshold=0.5, resolution_threshold=0.7) is None


def test_a_fix_naming_the_package_through_an_extra_is_no_subject_conflict() -> None:
    """``pip install 'pandas[parquet]'`` is about pyarrow too: the report still talks about the master's subject,
    and the master about the report's. Two fixes about packages the other side never mentions still conflict."""
    error = "ImportError: Missing optional dependency 'pyarrow'.  Use pip or conda to install pyarrow."
    master = extract_facts(
        error,
        "pyarrow, the Parquet engine pandas uses, is not installed (pandas does not depend on it).",
        fix(("install", "pip install pyarrow", "the Parquet engine")),
    )
    report = extract_facts(
        "ImportError: Unable to find a usable engine; tried using: 'pyarrow', 'fastparquet'.",
        "pandas has no Parquet engine in this environment; its parquet extra declares one.",
        fix(("install", "pip install 'pandas[parquet]'", "pulls in pyarrow as the Parquet engine")),
    )
    assert "pandas" in report.subjects and "pyarrow" in master.subjects
    assert conflicts(report, master) == []
    # the shared error text does not count: an explanation that never names the master's subject conflicts
    other = extract_facts(
        error,
        "The notebook kernel is another interpreter than the shell's venv.",
        fix(
            ("command", "python -m ipykernel install --user --name etl", "register the venv"),
            versions={"ipykernel": ">=6"},
        ),
    )
    assert checks(conflicts(other, master)) == ["subject"]


def test_a_missing_library_that_the_masters_fix_installs_is_no_failure_conflict() -> None:
    """Two reports of one cause name different libraries of one failure template: the master's fix installs the
    report's library too, so its cause accounts for the report. A library the master never explains still
    conflicts (Instant Client present, its libaio dependency missing)."""
    template = "chrome: error while loading shared libraries: {}: cannot open shared object file: No such file"
    chrome_fix = fix(
        ("install", "apt-get install -y libnss3 libxkbcommon0 libgbm1 libasound2", "the libraries Chrome links")
    )
    master = extract_facts(
        template.format("libnss3.so"), "The slim image lacks the system libraries Chrome needs.", chrome_fix
    )
    report = extract_facts(
        template.format("libxkbcommon.so.0"),
        "Chrome's shared libraries are not in the container image.",
        fix(("command", "npx puppeteer browsers install chrome --install-deps", "install Chrome and its deps")),
    )
    assert conflicts(report, master) == []
    dpi = 'DPI-1047: Cannot locate a 64-bit Oracle Client library: "{}: cannot open shared object file"'
    client = extract_facts(
        dpi.format("libclntsh.so"),
        "Oracle Instant Client (libclntsh) is not installed.",
        fix(("command", "unzip instantclient-basic-linuxx64.zip -d /opt/oracle", "install Instant Client")),
    )
    aio = extract_facts(
        dpi.format("libaio.so.1"),
        "Instant Client is installed but its dependency libaio is missing.",
        fix(("install", "apt-get install -y libaio1t64", "the asynchronous I/O library")),
    )
    assert checks(conflicts(aio, client)) == ["failure"]


PYOPENSSL_CAUSE = (
    "The installed pyOpenSSL predates the installed cryptography: it references OpenSSL bindings (X509_V_FLAG_CA, "
    "X509_V_FLAG_NOTIFY_POLICY) that the newer cryptography no longer exports. Upgrade pyOpenSSL to a release "
    "matching cryptography."
)
PYOPENSSL_FIX = fix(("upgrade", 'pip install -U "pyOpenSSL>=23.2.0"', "a pyOpenSSL built for the current bindings"))


def test_a_value_of_a_family_the_master_lists_is_no_failure_conflict() -> None:
    """``holdout5``'s miss: the master lists two flags of one family, the report fails on a third."""
    master = extract_facts(
        "AttributeError: module 'lib' has no attribute 'X509_V_FLAG_CA'", PYOPENSSL_CAUSE, PYOPENSSL_FIX
    )
    report = extract_facts(
        "    CB_ISSUER_CHECK = _lib.X509_V_FLAG_CB_ISSUER_CHECK\n"
        "AttributeError: module 'lib' has no attribute 'X509_V_FLAG_CB_ISSUER_CHECK'",
        "pyOpenSSL is too old for the cryptography version beside it, so importing OpenSSL.crypto fails on a "
        "missing lib attribute.",
        PYOPENSSL_FIX,
    )
    assert conflicts(report, master) == []


def test_a_value_outside_the_listed_family_still_conflicts() -> None:
    """A family needs two shared leading parts and two listed members: one named value (``url_quote``) or a
    library's name (``to_numpy_matrix`` and ``from_numpy_matrix`` share no leading part) lists none."""
    master = extract_facts(
        "AttributeError: module 'lib' has no attribute 'X509_V_FLAG_CA'", PYOPENSSL_CAUSE, PYOPENSSL_FIX
    )
    report = extract_facts(
        "AttributeError: module 'lib' has no attribute 'X509_get_notAfter'",
        "A stripped libcrypto build lacks X509_get_notAfter; rebuild cryptography against the system OpenSSL.",
        fix(("command", "pip install --no-binary cryptography cryptography", "build against the system OpenSSL")),
    )
    assert "failure" in checks(conflicts(report, master))
    cause = "NetworkX 3.0 removed to_numpy_matrix and from_numpy_matrix; use to_numpy_array / from_numpy_array."
    nx_fix = fix(("downgrade", 'pip install "networkx<3.0"', "keep the matrix converters"))
    nx_master = extract_facts("AttributeError: module 'networkx' has no attribute 'to_numpy_matrix'", cause, nx_fix)
    renamed = extract_facts(
        "AttributeError: module 'networkx' has no attribute 'from_pandas_dataframe'",
        "from_pandas_dataframe was renamed from_pandas_edgelist in NetworkX 2.0.",
        fix(("command", "use nx.from_pandas_edgelist", "the 2.0 name")),
    )
    assert "failure" in checks(conflicts(renamed, nx_master))


def test_a_working_version_range_gives_no_direction() -> None:
    """``holdout5``'s marshmallow master: ``pip install "marshmallow<4"`` with working versions ``>=3.13,<4``
    moves marshmallow down only, so an upgrade of it is an opposite move."""
    master = extract_facts(
        "TypeError: Field.__init__() got an unexpected keyword argument 'missing'",
        "marshmallow 4.0 removed the field arguments missing= and default=; pin marshmallow below 4.",
        fix(("downgrade", 'pip install "marshmallow<4"', "keeps missing="), versions={"marshmallow": ">=3.13,<4"}),
    )
    assert master.directions["marshmallow"] == {"down"}
    upgrade = extract_facts(
        "TypeError: __init__() got an unexpected keyword argument 'load_default'",
        "The schemas use load_default (added in marshmallow 3.13) but the environment has 3.10; upgrade marshmallow.",
        fix(
            ("upgrade", 'pip install -U "marshmallow>=3.13"', "introduced load_default"),
            versions={"marshmallow": ">=3.13"},
        ),
    )
    assert "direction" in checks(conflicts(upgrade, master))
