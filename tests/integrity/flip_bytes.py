#!/usr/bin/env python3
"""Corrupt input is refused before anything is trained on or written (issue 15, data integrity).

One byte is flipped inside the stored bytes of every dataset of a file (located with h5py: the byte ranges of
its chunks, or of its contiguous storage for files without chunks), one dataset at a time, and the command
that reads the file must exit non-zero with one line naming the file and the dataset:

  shard  every dataset of part-00000.h5 of a static (SBM, 2 parts, 2 ranks) and a dynamic (temporal SBM,
         snapshots and link steps, 1 part) partition: `halogen train` stops before epoch 1 with
         "part-00000.h5: /DATASET: checksum mismatch"; assignment.h5 /part: `halogen info DIR --check`.
  graph  every dataset of a static and of a dynamic graph file, of one with edge weights and of one with
         original ids:
         `halogen partition` (writing no meta.json) and `halogen info` refuse with "g.h5: /DATASET: checksum
         mismatch".
  npz    every member that `halogen convert --format npz` reads, in a stored and a deflated archive: a flipped
         byte in the member's data gives "data.npz: MEMBER: CRC-32 mismatch"; in the deflated archive one
         flip that zlib still decodes (only the CRC can catch it) and one that zlib rejects ("corrupt
         compressed data" or another message naming the member) are both tried.

Usage: flip_bytes.py shard|graph|npz  (environment: HALOGEN_BIN, HALOGEN_SOURCE_DIR). Exit 77 without h5py.
"""
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zipfile
import zlib

try:
    import h5py
except ImportError:
    print("skipped: python3 lacks h5py (scripts/install-deps.sh installs it)")
    sys.exit(77)

HALOGEN = os.environ["HALOGEN_BIN"]
SOURCE = os.environ.get("HALOGEN_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
MPIRUN = ["mpirun", "--oversubscribe", "--bind-to", "none"]
failures = []


def run(args, timeout=120):
    r = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    return r.returncode, r.stdout, r.stderr


def check(condition, what):
    if not condition:
        failures.append(what)
        print("FAIL: " + what)


def dataset_ranges(path):
    """[(dataset path, [(byte offset, byte count), ...])] for every dataset of `path` that stores bytes."""
    found = []

    def visit(name, obj):
        if not isinstance(obj, h5py.Dataset) or obj.id.get_storage_size() == 0:
            return
        if obj.chunks:
            ranges = []
            for i in range(obj.id.get_num_chunks()):
                info = obj.id.get_chunk_info(i)
                ranges.append((info.byte_offset, info.size))
        else:
            ranges = [(obj.id.get_offset(), obj.id.get_storage_size())]
        found.append(("/" + name, ranges))

    with h5py.File(path, "r") as f:
        f.visititems(visit)
    return found


def flip(path, offset):
    with open(path, "r+b") as f:
        f.seek(offset)
        byte = f.read(1)[0]
        f.seek(offset)
        f.write(bytes([byte ^ 0x10]))


def each_flipped_dataset(path, skip=lambda dataset: False):
    """Yields each dataset of `path` while one byte of it is flipped (the file is restored afterwards). The byte
    is the middle one of the dataset's last chunk: chunks end with their 4-byte checksum, so small datasets also
    get flips into the data, and the unit test io_h5_checksum_test flips every byte of a chunk."""
    original = open(path, "rb").read()
    try:
        for dataset, ranges in dataset_ranges(path):
            if skip(dataset):
                continue
            offset, size = ranges[-1]
            flip(path, offset + size // 2)
            yield dataset
            with open(path, "wb") as f:
                f.write(original)
    finally:
        with open(path, "wb") as f:
            f.write(original)


def expect_refused(label, rc, out, err, file, dataset, message="checksum mismatch"):
    before = len(failures)
    wanted = "%s: %s: %s" % (file, dataset, message)
    lines = [line for line in err.splitlines() if line.strip()]
    check(rc != 0, "%s: exit status 0" % label)
    check(any(wanted in line for line in lines), "%s: expected '%s' in stderr: %s" % (label, wanted, err.strip()))
    check("epoch 1/" not in out, "%s: training started: %s" % (label, out.strip()[:300]))
    if len(failures) == before:
        print("ok  %s: exit %d, %s" % (label, rc, next(line for line in lines if wanted in line).strip()))


def shard_case(work):
    # The static partition has 2 parts (halo and send lists hold data), trained by 2 ranks; the dynamic one
    # (snapshots and link steps) 1 part, trained by a singleton process: mpirun costs ~1.5 s a run.
    cases = [
        ("static", ["generate", "sbm", "--nodes", "300", "--classes", "3", "--features", "8", "--avg-degree", "6",
                    "--seed", "2"], 2, MPIRUN + ["-np", "2"], []),
        ("dynamic", ["generate", "temporal-sbm", "--nodes", "200", "--steps", "3", "--classes", "3", "--features",
                     "4", "--avg-degree", "6", "--seed", "2"], 1, [], ["--model", "tgcn", "--task", "link"]),
    ]
    for name, generate, parts_count, launcher, train_flags in cases:
        graph, parts = os.path.join(work, name + ".h5"), os.path.join(work, name + ".p")
        rc, out, err = run([HALOGEN] + generate + ["-o", graph])
        check(rc == 0, "generate %s: %s" % (name, err))
        rc, out, err = run([HALOGEN, "partition", graph, "-k", str(parts_count), "-o", parts])
        check(rc == 0, "partition %s: %s" % (name, err))
        train = launcher + [HALOGEN, "train", parts, "--epochs", "2", "--eval-every", "1", "--threads", "1"]
        train += train_flags
        rc, out, err = run(train)
        check(rc == 0 and "epoch 1/" in out, "%s: the intact partition does not train: %s" % (name, err))
        shard = os.path.join(parts, "part-00000.h5")
        count = 0
        # Later snapshot and link-step groups are read by the same loop (io/part_file.cpp) as the first: their
        # datasets are left out to keep the test short.
        later_step = lambda dataset: dataset.startswith(("/snapshots/0000", "/link/0000")) and \
            not dataset.startswith(("/snapshots/00000/", "/link/00000/"))
        for dataset in each_flipped_dataset(shard, later_step):
            rc, out, err = run(train)
            expect_refused("%s shard %s (train)" % (name, dataset), rc, out, err, "part-00000.h5", dataset)
            count += 1
        check(count >= 14, "%s: only %d datasets in the shard" % (name, count))
        print("%s shard: %d datasets flipped" % (name, count))
    parts = os.path.join(work, "static.p")
    for dataset in each_flipped_dataset(os.path.join(parts, "assignment.h5")):
        rc, out, err = run([HALOGEN, "info", parts, "--check"])
        expect_refused("assignment.h5 %s (info --check)" % dataset, rc, out, err, "assignment.h5", dataset)


def graph_case(work):
    mtx = os.path.join(work, "w.mtx")
    with open(mtx, "w") as f:  # real values: /csr/weight
        f.write("%%MatrixMarket matrix coordinate real general\n6 6 5\n1 2 0.5\n2 3 1.5\n3 4 2\n4 5 1\n5 6 3\n")
    snap = os.path.join(work, "s.txt")
    with open(snap, "w") as f:  # sparse vertex ids: /node/orig_id
        f.write("# a SNAP edge list\n10\t20\n20\t35\n35\t10\n7\t10\n")
    graphs = [
        ("static", ["generate", "sbm", "--nodes", "300", "--classes", "3", "--features", "8", "--avg-degree", "6",
                    "--seed", "2"]),
        ("dynamic", ["generate", "temporal-sbm", "--nodes", "200", "--steps", "2", "--classes", "3", "--features",
                     "4", "--avg-degree", "6", "--seed", "2"]),
        ("weighted", ["convert", "--format", "mtx", mtx]),
        ("snap", ["convert", "--format", "snap", snap]),
    ]
    for name, make in graphs:
        graph = os.path.join(work, name + ".h5")
        rc, out, err = run([HALOGEN] + make + ["-o", graph])
        check(rc == 0, "%s: %s" % (name, err))
        out_dir = os.path.join(work, name + ".out")
        rc, out, err = run([HALOGEN, "partition", graph, "-k", "2", "-o", out_dir])
        check(rc == 0, "%s: the intact graph does not partition: %s" % (name, err))
        shutil.rmtree(out_dir, ignore_errors=True)
        rc, out, err = run([HALOGEN, "info", graph])
        check(rc == 0, "%s: info on the intact graph: %s" % (name, err))
        count = 0
        for dataset in each_flipped_dataset(graph):
            rc, out, err = run([HALOGEN, "partition", graph, "-k", "2", "-o", out_dir])
            expect_refused("%s graph %s (partition)" % (name, dataset), rc, out, err, name + ".h5", dataset)
            check(not os.path.exists(os.path.join(out_dir, "meta.json")), "%s %s: partition wrote meta.json" %
                  (name, dataset))
            shutil.rmtree(out_dir, ignore_errors=True)
            rc, out, err = run([HALOGEN, "info", graph])
            expect_refused("%s graph %s (info)" % (name, dataset), rc, out, err, name + ".h5", dataset)
            count += 1
        check(count >= 3, "%s: only %d datasets" % (name, count))
        print("%s graph: %d datasets flipped" % (name, count))


def member_data(path):
    """{member name: (offset of its stored bytes, stored size, method)} of a zip archive."""
    raw = open(path, "rb").read()
    members = {}
    for info in zipfile.ZipFile(path).infolist():
        at = info.header_offset
        name_length, extra_length = struct.unpack("<HH", raw[at + 26:at + 30])
        members[info.filename] = (at + 30 + name_length + extra_length, info.compress_size, info.compress_type)
    return members


def inflate(stored):
    """The bytes a raw deflate stream decodes to, or None when zlib rejects it."""
    try:
        d = zlib.decompressobj(-15)
        out = d.decompress(stored) + d.flush()
        return out if d.eof else None
    except zlib.error:
        return None


def npz_case(work):
    # The members `halogen convert --format npz` reads (edge_index, node_feat, num_nodes_list of data.npz;
    # node_label of node-label.npz), in both fixtures.
    read_members = {"data.npz": ["edge_index.npy", "node_feat.npy", "num_nodes_list.npy"],
                    "node-label.npz": ["node_label.npy"]}
    for variant in ("npz_stored", "npz_deflated"):
        fixture = os.path.join(work, variant)
        shutil.copytree(os.path.join(SOURCE, "tests", "io", variant), fixture)
        out = os.path.join(work, variant + ".h5")
        rc, _, err = run([HALOGEN, "convert", "--format", "npz", fixture, "-o", out])
        check(rc == 0, "%s: the intact archive does not convert: %s" % (variant, err))
        os.remove(out)
        for archive, names in read_members.items():
            path = os.path.join(fixture, "raw", archive)
            original = open(path, "rb").read()
            members = member_data(path)
            for member in names:
                offset, size, method = members[member]
                data = original[offset:offset + size]
                file_size = zipfile.ZipFile(path).getinfo(member).file_size
                # Stored: a byte of the array data (past the .npy header). Deflated: the last byte of the stream
                # whose flip zlib still decodes to other bytes of the right length (only the CRC catches it),
                # and the first byte whose flip zlib rejects.
                flips = []
                if method == zipfile.ZIP_STORED:
                    flips.append((size - 2, "CRC-32 mismatch"))
                else:
                    plain = inflate(data)
                    decoded = [inflate(data[:i] + bytes([data[i] ^ 0x10]) + data[i + 1:]) for i in range(size)]
                    silent = [i for i in range(size) if decoded[i] is not None and len(decoded[i]) == file_size
                              and decoded[i] != plain]
                    check(silent, "%s %s: no flip that zlib decodes" % (archive, member))
                    flips += [(silent[-1], "CRC-32 mismatch")] if silent else []
                    loud = [i for i in range(size) if decoded[i] is None]
                    flips += [(loud[0], "")] if loud else []
                for at, message in flips:
                    flip(path, offset + at)
                    rc, _, err = run([HALOGEN, "convert", "--format", "npz", fixture, "-o", out])
                    label = "%s %s %s byte %d (convert)" % (variant, archive, member, at)
                    before = len(failures)
                    wanted = "%s: %s: %s" % (archive, member, message)
                    check(rc == 2, "%s: exit %d, expected 2" % (label, rc))
                    check(wanted in err, "%s: expected '%s' in: %s" % (label, wanted, err.strip()))
                    check(not os.path.exists(out), "%s: wrote %s" % (label, out))
                    if os.path.exists(out):
                        os.remove(out)
                    if len(failures) == before:
                        print("ok  %s: %s" % (label, err.strip()))
                    with open(path, "wb") as f:
                        f.write(original)


def main():
    case = sys.argv[1] if len(sys.argv) > 1 else ""
    cases = {"shard": shard_case, "graph": graph_case, "npz": npz_case}
    if case not in cases:
        sys.exit("usage: flip_bytes.py shard|graph|npz")
    work = tempfile.mkdtemp(prefix="halogen-integrity-")
    try:
        cases[case](work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        print("%d failures" % len(failures))
        sys.exit(1)
    print("%s: every corrupted byte was refused" % case)


if __name__ == "__main__":
    main()
