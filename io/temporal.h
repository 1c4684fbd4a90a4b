#pragma once
// Dynamic (discrete-time) graphs: readers and generators that produce a Graph with `snapshots` (one N x N CSR
// per time step over one vertex set) and, for regression, a [T, N] target series. The graph's /csr is the
// union of the snapshots (DESIGN.md, "Dynamic graphs"; docs/dynamic.md).
#include <cstdint>

#include "graph/graph.h"
#include "io/convert.h"
#include "io/generate.h"

namespace halogen::io {

// PyTorch-Geometric-Temporal JSON with one static edge set (Chickenpox, PedalMe, ...):
//   "edges": [[src, dst], ...]       ids in [0, N)
//   "weights": [w, ...]              optional, one per edge
//   "FX" or "X": [[v_0 .. v_{N-1}], ...]   T rows of N node values (the series to forecast)
//   "node_ids": {name: id, ...}      optional; when present N = its size
// N = |node_ids|, else the series width. Self-loops are dropped (the GCN normalisation adds I); unless
// options.directed the edges are symmetrised (a pair given both ways with different weights keeps the
// larger). Result: T snapshots, each equal to the union CSR; targets = the series [T, N]; no features, no
// splits (the temporal train/test split is a training option).
// Per-period layout (england_covid.json; chosen when the document has "edge_mapping"):
//   "time_periods": T                 optional; when present it must equal the rows of "y"
//   "edge_mapping": {"edge_index": {"0": [[src, dst], ...], ..., "T-1": [...]},
//                    "edge_weight": {"0": [w, ...], ...}}   edge_weight optional; one list per period each
//   "y": [[v_0 .. v_{N-1}], ...]       T rows: the regression target (new cases per region)
//   "node_ids"                         optional, as above
// Snapshot t = period t's edges (self-loops dropped, symmetrised unless options.directed, duplicates keep the
// larger weight); /csr = the union of the snapshots (unweighted). A period without edges gives an empty
// snapshot; all periods empty is a UserError.
// Montevideo bus layout ("nodes" + "links", chosen when both are present), Twitter tennis layout
// ("time_periods" + one object "0".."T-1" per period with "edges"/"weights"/"y") and WikiMaths layout (the
// same per-period objects with only "y", and one static "edges"/"weights" at the top): see
// convert_pgt_layouts.cpp and convert_pgt.cpp. Windmill output files are the static layout with the series
// under "block".
// Targets: with options.preprocess "pgt" (the default) the transform of PyTorch Geometric Temporal's loader
// for the layout is applied and recorded in g.preprocess (written as attributes "preprocess" and
// "preprocess_formula" of /node/label, and per node /node/label_offset, /node/label_scale):
//   England COVID, Windmill: (y - mean_v) / (std_v + 1e-10);  Montevideo bus, WikiMaths: (y - mean_v) / std_v
//   (population std of each node's series over all T steps; a constant series becomes 0 with scale 1);
//   Twitter tennis: log(1 + y);  Chickenpox ("FX"), PedalMe ("X"): none.
// With "none" the values are stored as given and the record says so. Features the loaders build (lagged
// series, Montevideo's X, tennis' one-hot degree) are not stored: the regression task builds its inputs from
// past target values (`train --lags`).
graph::Graph convert_pgt_json(const ConvertOptions& options);

// SNAP temporal signed networks (soc-sign-bitcoinotc.csv, soc-sign-bitcoinalpha.csv): comma-separated
// SOURCE,TARGET,RATING,TIME lines ('#'/'%' comments), TIME in seconds (may be fractional). Snapshot t holds
// the edges with floor((TIME - first TIME) / time_step) == t. Ids are remapped to 0..N-1 in increasing order
// of the original id (kept in orig_id unless already dense). Ratings are validated but not stored (a signed
// weight would break the GCN normalisation; link prediction uses the edge pattern). Self-loops dropped,
// symmetrised unless options.directed. A time step without any edge is a UserError (choose a larger
// time_step).
graph::Graph convert_snap_temporal(const ConvertOptions& options, double time_step);

// Temporal stochastic block model: T snapshots over the vertex set of generate_sbm(sbm). Snapshot 0 is that
// SBM's edge set. At step t >= 1 every vertex first changes class with probability `drift` (to a uniformly
// drawn other class), then every undirected edge of snapshot t-1 is dropped with probability `churn`, and as
// many new pairs are drawn by the SBM rule under the current classes (endpoint u uniform; v in u's class with
// probability homophily, else in a uniformly drawn other class; duplicates and self-pairs are discarded, so
// the edge count may shrink slightly). Labels stored are the classes at the last step; features and splits
// are those of generate_sbm (static). Deterministic per seed, independent of the thread count.
struct TemporalSbmParams {
  SbmParams sbm;
  int64_t steps = 10;
  double churn = 0.1;
  double drift = 0.0;
};
graph::Graph generate_temporal_sbm(const TemporalSbmParams& params);

// The union of the snapshots' edge sets (unweighted CSR), as stored in /csr of a dynamic graph.
graph::Csr snapshot_union(int64_t num_nodes, const std::vector<graph::Csr>& snapshots);

}  // namespace halogen::io
