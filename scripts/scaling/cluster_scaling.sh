#!/usr/bin/env bash
# Scaling over a network: `halogen bench epoch` on 1, 2 and 4 emulated hosts (scripts/cluster/cluster.sh, one
# rank per host) at 1, 10 and 100 Gb/s, overlap on and off, for GCN and GAT. Writes OUT/cluster_scaling.csv
# (one row per run and overlap setting) and prints it as a Markdown table. Needs root (namespaces).
#
#   scripts/scaling/cluster_scaling.sh HALOGEN OUT_DIR [--nodes N] [--hosts "1 2 4"] [--rates "1gbit 10gbit 100gbit"]
#                                      [--models "gcn gat"] [--epochs E] [--cpus C]
#
# The graph: `halogen generate sbm --nodes N --classes 16 --avg-degree 40 --features 128 --seed 1` (default N =
# 200000: 8.0M stored edges), partitioned with METIS for each host count. GCN: 2 layers, hidden 128. GAT: 2
# layers, 8 heads of 8, one output head. One thread per rank. --cpus C gives every host a CPU quota (default:
# none, the hosts share the machine's cores; so on a small machine compute does not scale with hosts).
# halo_bytes_per_rank is the forward exchange of one layer input at the exchanged width, from the partition's
# halo row counts (the largest rank's received rows x width x 4 bytes).
set -euo pipefail

halogen=$(realpath "${1:?usage: cluster_scaling.sh HALOGEN OUT_DIR [options]}")
out=${2:?usage: cluster_scaling.sh HALOGEN OUT_DIR [options]}
shift 2
nodes=200000 hosts_list="1 2 4" rates="1gbit 10gbit 100gbit" models="gcn gat" epochs=3 cpus=""
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) nodes=$2; shift 2 ;;
    --hosts) hosts_list=$2; shift 2 ;;
    --rates) rates=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --cpus) cpus=$2; shift 2 ;;
    *) echo "cluster_scaling: unknown option $1" >&2; exit 2 ;;
  esac
done
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cluster="$here/../cluster/cluster.sh"
mkdir -p "$out"
out=$(realpath "$out")
export HALOGEN_CLUSTER_DIR="$out/cluster" OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
trap 'bash "$cluster" down >/dev/null 2>&1 || true' EXIT

graph="$out/sbm-$nodes.h5"
[ -f "$graph" ] || "$halogen" generate sbm --nodes "$nodes" --classes 16 --avg-degree 40 --features 128 --seed 1 \
  -o "$graph" >/dev/null
for h in $hosts_list; do
  [ -d "$out/p$h" ] || "$halogen" partition "$graph" -k "$h" -o "$out/p$h" >/dev/null
done

model_args() {
  case "$1" in
    gcn) echo "--model gcn --layers 2 --hidden 128" ;;
    gat) echo "--model gat --layers 2 --hidden 8 --heads 8 --output-heads 1" ;;
  esac
}
# The largest rank's halo rows (forward receives), from the shards' metadata.
max_halo_rows() {
  python3 - "$1" <<'PY'
import glob, sys
import h5py
rows = 0
for f in glob.glob(sys.argv[1] + "/part-*.h5"):
    with h5py.File(f, "r") as h:
        rows = max(rows, h["/halo/gid"].shape[0] if "/halo/gid" in h else 0)
print(rows)
PY
}

csv="$out/cluster_scaling.csv"
echo "model,hosts,link,cpus_per_host,overlap,epoch_ms,spmm_ms,halo_ms,exposed_ms,exposed_share,halo_bytes_per_rank" >"$csv"
for model in $models; do
  width=128
  [ "$model" = gat ] && width=64
  for h in $hosts_list; do
    halo_bytes=$(( $(max_halo_rows "$out/p$h") * width * 4 ))
    for rate in $rates; do
      if [ "$h" = 1 ]; then
        [ "$rate" = "${rates%% *}" ] || continue  # one host: no link, one run
        link=none
        # shellcheck disable=SC2046
        rows=$("$halogen" bench epoch "$out/p1" $(model_args "$model") --threads 1 --epochs "$epochs" --warmup 1 \
          --overlap both 2>&1 | grep -E '^ +(on|off) ')
      else
        link=$rate
        bash "$cluster" up "$h" --bandwidth "$rate" ${cpus:+--cpus "$cpus"} >/dev/null 2>&1
        # shellcheck disable=SC2046
        rows=$(bash "$cluster" mpirun -np "$h" "$halogen" bench epoch "$out/p$h" $(model_args "$model") --threads 1 \
          --epochs "$epochs" --warmup 1 --overlap both 2>&1 | grep -E '^ +(on|off) ')
        bash "$cluster" down >/dev/null 2>&1
      fi
      while read -r overlap _ranks _threads epoch_ms spmm_ms _gemm halo_ms exposed_ms _rest; do
        share=$(python3 -c "print(f'{$exposed_ms / $halo_ms:.3f}' if $halo_ms > 0 else '0')")  # 1 host: no halo
        echo "$model,$h,$link,${cpus:-shared},$overlap,$epoch_ms,$spmm_ms,$halo_ms,$exposed_ms,$share,$halo_bytes" >>"$csv"
      done <<<"$rows"
      echo "cluster_scaling: $model, $h host(s), link $link done" >&2
    done
  done
done
python3 - "$csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
print("| model | hosts | link | overlap | epoch ms | halo ms | exposed ms | exposed / halo | halo MB per rank and layer |")
print("|---|---|---|---|---|---|---|---|---|")
for r in rows:
    halo = float(r["halo_ms"])
    share = f"{100 * float(r['exposed_share']):.1f}%" if halo > 0 else "-"
    print(f"| {r['model']} | {r['hosts']} | {r['link']} | {r['overlap']} | {float(r['epoch_ms']):.0f} | "
          f"{halo:.0f} | {float(r['exposed_ms']):.0f} | {share} | {int(r['halo_bytes_per_rank']) / 1e6:.1f} |")
PY
