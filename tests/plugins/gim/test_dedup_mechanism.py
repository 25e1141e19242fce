"""The mechanism check of the duplicate decision (:mod:`gateway_plugins.gim.mechanism`) and the explanation
vocabulary behind its weights (:mod:`gateway_plugins.gim.vocabulary`), on realistic reports: look-alikes whose
explanations differ beyond the error text must conflict, reworded duplicates must not."""

from __future__ import annotations

from gateway_plugins.gim.mechanism import ReportTerms, mechanism_conflict, report_terms
from gateway_plugins.gim.models import FixBundle
from gateway_plugins.gim.signatures import normalise_error
from gateway_plugins.gim.texts import error_text, resolution_text
from gateway_plugins.gim.vocabulary import ExplanationVocabulary, explanation_terms, stem
from tests.plugins.gim.test_dedup_evidence import fix

POINTER = ("command", "see the linked thread", "")
"""A fix that only points elsewhere, as many submissions (and the evaluation protocol's) carry."""

MEMORY = [
    (
        "NumPy 1.24 removed the aliases np.float / np.int; old code using them crashes.",
        fix(("downgrade", 'pip install "numpy<1.24"', "keep the aliases")),
    ),
    (
        "Werkzeug 3.0 removed url_quote, which Flask 2.2 imports.",
        fix(("downgrade", 'pip install "Werkzeug<3"', "keep url_quote")),
    ),
    (
        "The GPU ran out of memory: the batch does not fit; reduce the batch size.",
        fix(("config", "--per_device_train_batch_size 8", "smaller batches")),
    ),
    (
        "Python 3.12 removed distutils; install setuptools for its shim.",
        fix(("install", "pip install setuptools", "distutils shim")),
    ),
    (
        "The container is not started with --gpus all, so no driver is visible.",
        fix(("flag", "docker run --gpus all image", "expose the GPUs")),
    ),
    (
        "pandas 2.0 removed DataFrame.append; use pd.concat.",
        fix(("command", "replace df.append(row) with pd.concat", "supported API")),
    ),
    (
        "An old protoc generated the _pb2 files; protobuf 4 rejects them.",
        fix(("downgrade", 'pip install "protobuf<=3.20.3"', "old runtime")),
    ),
    (
        "Jest does not transform node_modules, so ESM-only packages fail to parse.",
        fix(("config", "transformIgnorePatterns in jest.config.js", "transpile the package")),
    ),
    (
        "The index was built with another embedding model dimension.",
        fix(("command", "rebuild the index", "same dimension")),
    ),
    (
        "The user is not in the docker group, so the socket refuses the connection.",
        fix(("command", "sudo usermod -aG docker $USER", "socket access")),
    ),
] + [(f"Import error in plugin {n}: the plugin was built for another version.", fix(POINTER)) for n in range(150)]


def vocabulary() -> ExplanationVocabulary:
    vocab = ExplanationVocabulary()
    for cause, bundle in MEMORY:
        vocab.add(explanation_terms(resolution_text(cause, bundle)))
    return vocab


def terms(error: str, cause: str, bundle: FixBundle) -> ReportTerms:
    """A report's terms exactly as the pack derives them from the stored texts."""
    return report_terms(error_text(normalise_error(error), error), resolution_text(cause, bundle), bundle)


def pointer(cause: str) -> FixBundle:
    return fix(("command", "see the linked thread", cause))


NO_CUDA = (
    '  File "/home/u/.venv/lib/python3.11/site-packages/torch/cuda/__init__.py", line 289, in _lazy_init\n'
    '    raise AssertionError("Torch not compiled with CUDA enabled")\n'
    "AssertionError: Torch not compiled with CUDA enabled"
)
CPU_WHEEL = (
    "pip installed the CPU-only torch wheel (default index on Windows / a plain `pip install torch` resolved to "
    "+cpu); reinstall from the CUDA index URL."
)
APPLE = "The code calls .cuda() on an Apple Silicon Mac, where no CUDA build exists; use the 'mps' device or CPU."


def test_terms_are_stemmed_words_and_whole_identifiers() -> None:
    found = explanation_terms("Installs the certificates; set REQUESTS_CA_BUNDLE (certifi is outdated)")
    assert {"instal", "certif", "requests_ca_bundle", "request", "bundl", "outdat"} <= found
    assert stem("installed") == stem("installing") == "instal"
    assert stem("cu121") == "cu121" and stem("torch_cuda_arch_list") == "torch_cuda_arch_list"


def test_common_terms_and_boilerplate_weigh_little_unseen_terms_most() -> None:
    vocab = vocabulary()
    assert len(vocab) == len(MEMORY)
    assert vocab.idf("thread") < 1.0 < 2.0 < vocab.idf("transformignorepattern")
    assert vocab.idf("never-stored-anywhere") == vocab.unseen
    assert vocab.unseen > vocab.idf("transformignorepattern")


def test_two_causes_behind_the_same_error_conflict() -> None:
    """The same AssertionError, two mechanisms (a CPU-only wheel; a Mac without CUDA), generic fixes."""
    wheel = terms(NO_CUDA, CPU_WHEEL, pointer(CPU_WHEEL))
    apple = terms(NO_CUDA.replace("/home/u", "/Users/me"), APPLE, pointer(APPLE))
    found = mechanism_conflict(apple, [wheel], vocabulary(), min_overlap=0.35)
    assert found is not None and found.check == "mechanism"
    submission_side, master_side = found.detail.split("; master adds ")
    assert "appl" in submission_side and "cpu_only" in master_side


def test_a_reworded_cause_with_the_same_fix_agrees() -> None:
    actions = fix(("command", "pip install torch --index-url https://download.pytorch.org/whl/cu121", "CUDA build"))
    master = terms(NO_CUDA, CPU_WHEEL, actions)
    reworded = terms(
        "AssertionError: Torch not compiled with CUDA enabled",
        "The torch in the venv is the +cpu build that pip picks by default, not a CUDA wheel.",
        actions,
    )
    assert mechanism_conflict(reworded, [master], vocabulary(), min_overlap=0.35) is None


def test_a_differently_worded_fix_that_does_the_same_thing_agrees() -> None:
    """The explanations share little beyond the error, but both fixes install tf-keras."""
    error = (
        "ValueError: Your currently installed version of Keras is Keras 3, but this is not yet supported in "
        "Transformers. Please install the backwards-compatible tf-keras package with `pip install tf-keras`."
    )
    master = terms(
        error,
        "TensorFlow 2.16+ ships Keras 3 as tf.keras, which transformers' TensorFlow models do not support.",
        fix(("install", "pip install tf-keras", "Keras 2 for transformers")),
    )
    reworded = terms(
        error,
        "With TF 2.16 the default Keras became Keras 3, but Hugging Face TF classes need Keras 2.",
        fix(("install", "python -m pip install tf-keras", "backwards-compatible Keras 2")),
    )
    vocab = vocabulary()
    assert mechanism_conflict(reworded, [master], vocab, min_overlap=0.9) is None
    without_fix = terms(
        error, "With TF 2.16 the default Keras became Keras 3; Hugging Face TF classes need Keras 2.", pointer("")
    )
    assert mechanism_conflict(without_fix, [master], vocab, min_overlap=0.9) is not None


def test_explanations_that_only_restate_the_error_carry_no_evidence() -> None:
    error = "ModuleNotFoundError: No module named 'distutils'"
    master = terms(error, "No module named distutils.", pointer("No module named distutils."))
    other = terms(error, "The distutils module is not found.", pointer("The distutils module is not found."))
    assert mechanism_conflict(other, [master], vocabulary(), min_overlap=0.35) is None


def test_one_agreeing_report_of_the_master_is_enough() -> None:
    wheel = terms(NO_CUDA, CPU_WHEEL, pointer(CPU_WHEEL))
    apple = terms(NO_CUDA, APPLE, pointer(APPLE))
    child = terms(NO_CUDA, "Apple Silicon Macs have no CUDA build; call the code with the 'mps' device.", pointer(""))
    vocab = vocabulary()
    assert mechanism_conflict(apple, [wheel], vocab, min_overlap=0.35) is not None
    assert mechanism_conflict(apple, [wheel, child], vocab, min_overlap=0.35) is None


def test_zero_min_overlap_turns_the_check_off() -> None:
    wheel = terms(NO_CUDA, CPU_WHEEL, pointer(CPU_WHEEL))
    apple = terms(NO_CUDA, APPLE, pointer(APPLE))
    assert mechanism_conflict(apple, [wheel], vocabulary(), min_overlap=0.0) is None


def test_fixes_running_the_same_tool_on_different_things_do_not_agree() -> None:
    """``pip install numba`` and ``pip install numpy`` share the tool and its verb, which is not the same action;
    ``gunicorn --timeout`` and ``gunicorn --workers`` neither. The same package installed through another spelling
    of the tool, or its extra, does."""
    error = "ImportError: Numba needs NumPy 1.26 or less. Got NumPy 2.0."
    master = terms(
        error,
        "The installed numba predates NumPy 2 support; upgrade numba to a release built for it.",
        fix(("upgrade", "pip install -U numba", "a numba that supports NumPy 2")),
    )
    other = terms(
        error,
        "The distro's python3-numpy shadows the venv's; the venv has an old numpy pinned by apt.",
        fix(("install", "pip install --user numpy==1.26.4", "a NumPy numba accepts")),
    )
    vocab = vocabulary()
    assert other.actions & master.actions  # the tool and its verb are shared ...
    assert not other.acts_like(master, vocab)  # ... which is not the same action
    assert mechanism_conflict(other, [master], vocab, min_overlap=0.9) is not None
    same = terms(error, "numba is too old for NumPy 2.", fix(("upgrade", "uv add -U numba", "newer numba")))
    assert same.acts_like(master, vocab)
    timeout = terms("[CRITICAL] WORKER TIMEOUT (pid:12)", "slow requests", fix(("flag", "gunicorn --timeout 120", "")))
    workers = terms("[CRITICAL] WORKER TIMEOUT (pid:12)", "OOM kill", fix(("flag", "gunicorn --workers 2", "")))
    assert not workers.acts_like(timeout, vocab)


def test_removing_a_package_is_not_installing_it() -> None:
    error = 'RuntimeError: Form data requires "python-multipart" to be installed.'
    master = terms(error, "python-multipart is missing.", fix(("install", "pip install python-multipart", "")))
    remove = terms(
        error,
        "The unrelated 'multipart' package shadows python-multipart's module name.",
        fix(("command", "pip uninstall -y python-multipart", "drop the clash")),
    )
    assert not remove.acts_like(master, vocabulary())


def test_an_extra_acts_on_what_its_explanation_says_it_pulls_in() -> None:
    error = "ImportError: Missing optional dependency 'pyarrow'.  Use pip or conda to install pyarrow."
    master = terms(error, "pyarrow is not installed.", fix(("install", "pip install pyarrow", "Parquet engine")))
    extra = terms(
        error,
        "pandas declares its Parquet engine only as an optional extra.",
        fix(("install", "pip install 'pandas[parquet]'", "pulls in pyarrow as the Parquet engine")),
    )
    assert extra.acts_like(master, vocabulary())
    plain = terms(error, "pandas lacks an engine.", fix(("install", "pip install pandas", "pulls in pyarrow")))
    assert not plain.acts_like(master, vocabulary())  # no extra: the explanation does not add objects
