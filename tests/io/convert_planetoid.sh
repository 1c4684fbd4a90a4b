#!/usr/bin/env bash
# `halogen convert --format planetoid` (io/convert_planetoid.cpp, io/pickle.cpp) against the reference,
# scripts/convert_planetoid.py, dataset by dataset:
#  (a) the tiny CiteSeer-like set of planetoid_fixture.py (a test id without a tx row) pickled by Python 3 with
#      protocols 0, 2 and 4, its graph a dict or a defaultdict; automatic detection and --name; no set, two sets;
#  (b) with ../shared/data/planetoid: real Cora (Python-2 pickles; 2708 nodes, 10556 stored edges, 1433
#      features, 7 classes, split 140/500/1000), and a truncated and a wrong-typed pickle, each one error line
#      naming the file. (b) is skipped without the shared data.
# Skips (77) when python3 lacks numpy/scipy/h5py.
source "$(dirname "$0")/../common.sh"
require_python numpy scipy h5py
python3 - "$work" "$src" "$bin" "$data" <<'PY' || exit 1
import os, pickle, shutil, subprocess, sys
import h5py

work, src, halogen, data = sys.argv[1:5]
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(src, "tests", "io"))
import planetoid_fixture  # noqa: E402
from same_graph import assert_same_graph  # noqa: E402

script = os.path.join(src, "scripts", "convert_planetoid.py")


def run(*args):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True)


def convert_both(directory, name, tag, *flags, valid_size=500):
    """The script's file and halogen's (with `flags`) for one set; returns both paths after checking them."""
    ref, out = os.path.join(work, tag + ".py.h5"), os.path.join(work, tag + ".h5")
    r = run(sys.executable, script, directory, name, "--valid-size", valid_size, "-o", ref)
    assert r.returncode == 0, r.stderr
    if valid_size != 500:
        flags += ("--valid-size", str(valid_size))
    r = run(halogen, "convert", directory, "-o", out, *flags)
    assert r.returncode == 0, f"{tag}: {r.stdout}{r.stderr}"
    assert_same_graph(ref, out)
    r = run(halogen, "info", "--check", out)
    assert r.returncode == 0, r.stdout + r.stderr
    return ref, out


def one_error_line(result, path, tag):
    assert result.returncode != 0, f"{tag}: accepted"
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and path in lines[0], f"{tag}: expected one line naming {path}: {result.stderr!r}"
    return lines[0]


# (a) the tiny set: Python 3 pickles of protocols 0, 2, 4; a dict and a defaultdict.
for protocol in (0, 2, 4):
    for defaultdict in (False, True):
        tag = f"tiny-p{protocol}{'-dd' if defaultdict else ''}"
        d = os.path.join(work, tag)
        planetoid_fixture.write(d, protocol=protocol, defaultdict=defaultdict)
        flags = ("--format", "planetoid") if protocol == 2 else ()  # detected: a directory with ind.*.graph
        _, out = convert_both(d, "tiny", tag, *flags, valid_size=2)  # 500 would overlap the test ids
with h5py.File(out, "r") as g:  # the known values (as python_converters.sh checks the script's file)
    assert g["node/label"][()].tolist() == [0, 1, 2, 2, 1, -1, 0], g["node/label"][()]
    assert g["node/feat"][()].tolist() == [[1, 0], [0, 1], [2, 0], [0, 2], [4, 4], [0, 0], [6, 6]]
    assert g["csr/indices"][()].tolist() == [1, 2, 0, 0, 4, 3, 6, 4], g["csr/indices"][()]
    assert g["split/test"][()].tolist() == [6, 4] and g["split/valid"][()].tolist() == [2, 3]
    assert g.attrs["name"] in ("tiny", b"tiny")
# Two sets in one directory: --name picks one, without it the converter asks for it.
two = os.path.join(work, "two")
planetoid_fixture.write(two, name="tiny")
planetoid_fixture.write(two, name="other")
convert_both(two, "other", "two-other", "--name", "other", valid_size=2)
line = one_error_line(run(halogen, "convert", two, "-o", os.path.join(work, "x.h5")), two, "two sets")
assert "several Planetoid sets (other, tiny)" in line and "--name" in line, line
line = one_error_line(run(halogen, "convert", "--format", "planetoid", two, "--name", "cora", "-o",
                          os.path.join(work, "x.h5")), two, "absent name")
assert "no Planetoid set 'cora'" in line, line
empty = os.path.join(work, "empty")
os.makedirs(empty)
one_error_line(run(halogen, "convert", "--format", "planetoid", empty, "-o", os.path.join(work, "x.h5")), empty,
               "no set")
print("planetoid: protocols 0/2/4, dict and defaultdict: halogen convert equals convert_planetoid.py")

# (b) real Cora, as published (Python 2 pickles).
cora = os.path.join(data, "planetoid") if data else ""
if not cora or not os.path.isfile(os.path.join(cora, "ind.cora.graph")):
    print(f"cora part skipped: no shared data ({cora or 'HALOGEN_SHARED_DATA unset'})")
    sys.exit(0)
_, out = convert_both(cora, "cora", "cora")
with h5py.File(out, "r") as g:
    assert g.attrs["num_nodes"] == 2708 and g.attrs["num_edges"] == 10556 and g.attrs["num_classes"] == 7
    assert g["node/feat"].shape == (2708, 1433), g["node/feat"].shape
    assert [g["split/" + s].shape[0] for s in ("train", "valid", "test")] == [140, 500, 1000]
# A truncated pickle and a wrong-typed one: one line naming the file, from halogen and from the script.
for part, damage in (("allx", "truncate"), ("graph", "list"), ("ty", "dict")):
    bad = os.path.join(work, "bad-" + part)
    shutil.copytree(cora, bad)
    path = os.path.join(bad, "ind.cora." + part)
    os.chmod(path, 0o644)
    if damage == "truncate":
        with open(path, "rb") as f:
            content = f.read()
        with open(path, "wb") as f:
            f.write(content[: len(content) // 2])
    else:
        with open(path, "wb") as f:
            pickle.dump([1, 2, 3] if damage == "list" else {"a": 1}, f, protocol=2)
    line = one_error_line(run(halogen, "convert", bad, "-o", os.path.join(bad, "out.h5")), path, part)
    assert not os.path.exists(os.path.join(bad, "out.h5")), part
    r = run(sys.executable, script, bad, "cora", "-o", os.path.join(bad, "py.h5"))
    assert r.returncode != 0 and path in r.stderr, r.stderr
    print(f"  {damage} ind.cora.{part}: {line}")
print("cora: halogen convert equals convert_planetoid.py (2708 nodes, 10556 edges, 1433 features, 7 classes, "
      "split 140/500/1000)")
PY
