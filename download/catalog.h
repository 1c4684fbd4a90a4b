#pragma once
// The datasets `halogen download` knows by name: where each file is published, its size and SHA-256 where
// they could be established (and from where), and how the files become a graph file.
#include <cstdint>
#include <string>
#include <vector>

namespace halogen::download {

struct PublishedFile {
  std::string name;     // the published file name (also its name under --mirror BASE/)
  std::string url;      // where it is published
  std::string sha256;   // "" when no hash could be established: trust on first use
  int64_t bytes = -1;   // -1 when unknown
};

enum class Packaging {
  zip,    // one zip archive, unpacked before converting
  files,  // files converted as they are (Planetoid pickles, PGT JSON)
};

struct Dataset {
  std::string name;             // e.g. "ogbn-arxiv"
  std::vector<PublishedFile> files;
  Packaging packaging = Packaging::files;
  std::string format;           // `halogen convert --format`
  std::string input;            // the converter's input below the unpacked (or downloaded) files: a directory
                                // ("arxiv"), a file ("chickenpox.json"), or "" for the directory itself
  int64_t vertices = 0;
  int64_t edges = 0;            // as published
  std::string edges_note;       // e.g. "undirected pairs"
  int64_t approx_download_bytes = 0;  // for --list and the disk check when the table has no exact sizes
  int64_t approx_unpacked_bytes = 0;  // zip: the members' total
  int64_t approx_graph_bytes = 0;     // the graph file
  std::string licence;          // licence and source, one line
  std::string hash_source;      // where the SHA-256 values come from ("" when none are known)
};

const std::vector<Dataset>& catalog();
// The dataset called `name` (case-insensitive); UserError listing the names when there is none.
const Dataset& find_dataset(const std::string& name);

}  // namespace halogen::download
