#pragma once
// `halogen download NAME`: fetch a published dataset's files (download/catalog.h) into a cache directory,
// verify each against its size and SHA-256 (the table's, --checksums', or the one recorded on first use),
// unpack, and convert them into a graph file. Layout of the cache DIR:
//   DIR/.partial/NAME/FILE   a file in transit (a broken or killed transfer resumes from it)
//   DIR/NAME/FILE            a verified file (removed once converted, unless --keep-archive)
//   DIR/NAME/unpacked/       a zip archive's members while converting
//   DIR/NAME/verified.json   SHA-256 and size of every verified file (trust-on-first-use records included)
//                            and the graph file converted from them
//   DIR/.NAME.lock           held (flock) by the job working on NAME; a second job waits for it
//   DIR/NAME.h5              the graph file, unless -o names another
#include <cstdint>
#include <functional>
#include <string>

#include "download/http.h"

namespace halogen::download {

struct DownloadOptions {
  std::string name;
  std::string output;     // "" : DIR/NAME.h5
  std::string data_dir;   // "" : $HALOGEN_DATA, else ~/.cache/halogen
  std::string mirror;     // "" : the published URLs; else BASE/ + each file's published name
  std::string checksums;  // SHA256SUMS file replacing the table's hashes and sizes
  bool keep_archive = false;
  TransferOptions transfer;
};

// Writes the graph file `output` from the converter input `input` (`halogen convert --format FORMAT`).
using ConvertFunction = std::function<void(const std::string& format, const std::string& input,
                                           const std::string& output, const std::string& name)>;

struct DownloadResult {
  std::string output;       // the graph file
  bool up_to_date = false;  // it was there already, converted from verified files: nothing was done
  int fetched = 0;          // files transferred by this job
};

DownloadResult download_dataset(const DownloadOptions& options, const ConvertFunction& convert);

// --data-dir, else $HALOGEN_DATA, else $HOME/.cache/halogen.
std::string resolve_data_dir(const std::string& option);

// `halogen download --list`: one line per dataset.
std::string catalog_listing();

}  // namespace halogen::download
