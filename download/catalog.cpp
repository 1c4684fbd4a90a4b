#include "download/catalog.h"

#include <algorithm>
#include <cctype>

#include "core/error.h"
#include "core/format.h"

namespace halogen::download {

namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

// Planetoid: the eight files of kimiyoung/planetoid's data/ folder (the files PyG's Planetoid and DGL fetch).
// SHA-256 and sizes: computed from that repository's git objects (commit af6abf4, 2016); Cora's also equal the
// copies the project tests with. PubMed's allx was too large for the snapshot read: trusted on first use.
Dataset planetoid(const std::string& name, int64_t vertices, int64_t edges,
                  const std::vector<std::pair<const char*, std::pair<const char*, int64_t>>>& parts,
                  int64_t approx_bytes, int64_t graph_bytes) {
  Dataset d;
  d.name = name;
  d.packaging = Packaging::files;
  d.format = "planetoid";
  d.input = "";
  for (const auto& [part, hash_size] : parts) {
    PublishedFile f;
    f.name = strformat("ind.%s.%s", name.c_str(), part);
    f.url = "https://github.com/kimiyoung/planetoid/raw/master/data/" + f.name;
    f.sha256 = hash_size.first;
    f.bytes = hash_size.second;
    d.files.push_back(f);
  }
  d.vertices = vertices;
  d.edges = edges;
  d.edges_note = "undirected";
  d.approx_download_bytes = approx_bytes;
  d.approx_graph_bytes = graph_bytes;
  d.licence = "Planetoid (Yang et al. 2016), kimiyoung/planetoid, MIT";
  d.hash_source = "computed from kimiyoung/planetoid's git objects (commit af6abf4)";
  return d;
}

Dataset pgt(const std::string& name, const std::string& file, const std::string& url, const char* sha256,
            int64_t bytes, int64_t vertices, int64_t edges, const std::string& note, int64_t approx_bytes) {
  Dataset d;
  d.name = name;
  d.packaging = Packaging::files;
  d.format = "pgt-json";
  d.input = file;
  d.files.push_back({file, url, sha256, bytes});
  d.vertices = vertices;
  d.edges = edges;
  d.edges_note = note;
  d.approx_download_bytes = bytes > 0 ? bytes : approx_bytes;
  d.approx_graph_bytes = 4 * d.approx_download_bytes;
  d.licence = "PyTorch Geometric Temporal (Rozemberczki et al. 2021), MIT";
  d.hash_source = sha256[0] != 0 ? "computed from benedekrozemberczki/pytorch_geometric_temporal's git objects "
                                   "(commit adefe44)"
                                 : "";
  return d;
}

const std::string kPgtRaw = "https://raw.githubusercontent.com/benedekrozemberczki/pytorch_geometric_temporal/master/dataset/";

std::vector<Dataset> make_catalog() {
  std::vector<Dataset> all;
  // A zip archive (its file name: the URL's last component) unpacked into `subdir`, converted with `format`.
  auto zipped = [&](const char* name, const std::string& url, const char* subdir, const char* format, int64_t v,
                    int64_t e, const char* note, int64_t download_mib, int64_t unpacked_mib, int64_t graph_mib,
                    const char* licence) {
    Dataset d;
    d.name = name;
    d.packaging = Packaging::zip;
    d.format = format;
    d.input = subdir;
    d.files.push_back({url.substr(url.rfind('/') + 1), url, "", -1});
    d.vertices = v;
    d.edges = e;
    d.edges_note = note;
    d.approx_download_bytes = download_mib * kMiB;
    d.approx_unpacked_bytes = unpacked_mib * kMiB;
    d.approx_graph_bytes = graph_mib * kMiB;
    d.licence = licence;
    all.push_back(d);
  };
  const std::string ogb = "http://snap.stanford.edu/ogb/data/nodeproppred/";
  // OGB and DGL publish no checksums for their archives: trusted on first use.
  zipped("ogbn-arxiv", ogb + "arxiv.zip", "arxiv", "ogb", 169343, 1166243, "directed citations", 81, 120, 140,
         "OGB (Hu et al. 2020), Microsoft Academic Graph, ODC-BY");
  zipped("ogbn-products", ogb + "products.zip", "products", "ogb", 2449029, 61859140, "undirected pairs", 1450,
         3400, 2100, "OGB (Hu et al. 2020), Amazon co-purchase network, Amazon licence");
  zipped("ogbn-papers100M", ogb + "papers100M-bin.zip", "papers100M-bin", "npz", 111059956, 1615685872,
         "directed citations", 58400, 80000, 85000, "OGB (Hu et al. 2020), Microsoft Academic Graph, ODC-BY");
  zipped("reddit", "https://data.dgl.ai/dataset/reddit.zip", "", "reddit", 232965, 114615892, "stored both ways",
         1400, 2100, 1500, "Reddit posts 2014 (Hamilton et al. 2017, GraphSAGE), the archive DGL and PyG use");
  all.push_back(planetoid("cora", 2708, 5429,
                          {{"x", {"23cfa55d91c6f624233f5eb7b6e3f141f1bd2b2ae39608a63cf5d084bb27baab", 22119}},
                           {"tx", {"b9afbaa4a400df991f6f02ef677e1e44da55ffc04801fd02f9e673987829226a", 148025}},
                           {"allx", {"9419ba2f26f5c35243db64aba110e0f35a04851609e0dc5433450676ca6b8543", 257305}},
                           {"y", {"94465c14eb53e04ca262198dcbb2521ee8af60fb3f3d546cd6ca24a511b0e7d1", 4054}},
                           {"ty", {"41f5ac76596a1699cc33f53084a2419e92961c42bb75f36fc38e616d348532ad", 28135}},
                           {"ally", {"2b998f5cc7fedc86e7f97ca2498f47a1ffc1462c29e2d578b23bf3f62b6e7d71", 47959}},
                           {"graph", {"58f13302f39dde8852dad6fe6d15b89b077b6d7f837626bce671ef80344b383d", 59847}},
                           {"test.index", {"297ce89af2b51a6a194181c7dbe1796c6a1cf9cd9349a88383b1b1e227867875", 5000}}},
                          572444, 17 * kMiB));
  all.push_back(planetoid("citeseer", 3327, 4732,
                          {{"x", {"d20de19150741e555de0ed037195630fc194114ebc7fd72ced62810148aa22f6", 31087}},
                           {"tx", {"539a8906a2da97628d212f2fdd668c109a8b3f0d36574b59e5d3fd5b5303da21", 260321}},
                           {"allx", {"2ac30345d95c9ec933a817ee0bdd6a5f077f8c184a20e696910192d534414668", 595021}},
                           {"y", {"8ba87e515d8e3ee3cf52f6d2c5b86aa73f11ecad825a808455209ec26cd54924", 3014}},
                           {"ty", {"55e5bd1ba1e733a04598753ad1a8d57957f4b8f89e74519f41f4f4938767e4ce", 24135}},
                           {"ally", {"f704b2d986dde6c2669934de1f3ae5696a6cf9455c0f6b2646a2d135ea0a1c95", 55623}},
                           {"graph", {"d79a4ef9d3e7169aee8946145f6b7306e35bc79bffad26346cfb94e10e9912a7", 61987}},
                           {"test.index", {"2af990671580b6b2df5d158d1038f8292e30c9cd821b5453f399659b25b723d4", 5000}}},
                          1036188, 50 * kMiB));
  all.push_back(planetoid("pubmed", 19717, 44338,
                          {{"x", {"fbe9cb5c47200d1b7769a26e579be3b7130b556831f9d850e77c4c74f2599b33", 23172}},
                           {"tx", {"4eb5f5d0f30f26497eb0ac6ac9719d09c67e284f1ed0385c93f3ef27a671da3d", 405505}},
                           {"allx", {"", -1}},
                           {"y", {"e6c807633307a07ed659249006536a147c7999c797f11a2560752990181b41b3", 854}},
                           {"ty", {"ee2e0d4819d9fbcc403689c3bf2e49face401b605932f093bc58ab6461130fdd", 12135}},
                           {"ally", {"0c37bbe3b5014ec365e9d393cf4791925e5ed94fb194305d74f064a8d7b50f0e", 224739}},
                           {"graph", {"5b89f0036ca22909471f1e6558eb42fa06e0c730a577bde5b058b40638f81dc9", 471808}},
                           {"test.index", {"b101d421688bbaecbd82e8a18f1e282378d6830f3a37666f28ebc47f844341b5", 6000}}},
                          9 * kMiB, 45 * kMiB));
  all.back().hash_source += "; ind.pubmed.allx: trusted on first use";
  all.push_back(pgt("chickenpox", "chickenpox.json", kPgtRaw + "chickenpox.json",
                    "724b48cfb274b2ecbb855bdb99b970b5ef9dd3671694fa477435dc1e08293735", 220340, 20, 102,
                    "directed, 521 weekly snapshots", 0));
  all.push_back(pgt("pedalme", "pedalme_london.json", kPgtRaw + "pedalme_london.json",
                    "8c42b893441901fb805c4f0f937543d5bb9297884ac3dec7622a3e9f7c35a79b", 17156, 15, 225,
                    "weighted, 36 weekly snapshots", 0));
  all.push_back(pgt("england-covid", "england_covid.json", kPgtRaw + "england_covid.json",
                    "497056cc4585b58951fd5cd17554fe0c535f68ea0c907a5b5727ae30e3913450", 1436945, 129, 0,
                    "mobility edges per day, 61 daily snapshots", 0));
  all.push_back(pgt("montevideo-bus", "montevideo_bus.json", kPgtRaw + "montevideo_bus.json",
                    "37d9c6286d474077b5c05173c1570c4da42c387013116daa8862c7a6cab86a75", 3131884, 675, 690,
                    "directed, 744 hourly snapshots", 0));
  all.push_back(pgt("twitter-tennis-rg17", "twitter_tennis_rg17.json", kPgtRaw + "twitter_tennis_rg17.json",
                    "1f9c3501a96881bbc26c899483c3fce73f36081f2df29d91fcd33c6dc4edf9c8", 1982751, 1000, 0,
                    "mention edges per hour, 120 snapshots", 0));
  all.push_back(pgt("twitter-tennis-uo17", "twitter_tennis_uo17.json", kPgtRaw + "twitter_tennis_uo17.json",
                    "1c566bf220272c9a6f8b83161b432a77c9f8973e34f748e1d0c8f6d5ee138579", 1936663, 1000, 0,
                    "mention edges per hour, 112 snapshots", 0));
  all.push_back(pgt("wikimath", "wikivital_mathematics.json", kPgtRaw + "wikivital_mathematics.json", "", -1, 1068,
                    27079, "weighted links, 731 daily snapshots", 12 * kMiB));
  all.push_back(pgt("windmill-small", "windmill_output_small.json",
                    "https://graphmining.ai/temporal_datasets/windmill_output_small.json", "", -1, 11, 121,
                    "weighted, 17472 hourly snapshots", 4 * kMiB));
  all.push_back(pgt("windmill-medium", "windmill_output_medium.json",
                    "https://graphmining.ai/temporal_datasets/windmill_output_medium.json", "", -1, 26, 676,
                    "weighted, 17504 hourly snapshots", 10 * kMiB));
  all.push_back(pgt("windmill-large", "windmill_output.json",
                    "https://anl.app.box.com/shared/static/wgwb75lt3ty3pv5a15y9bilx1mjhcq59", "", -1, 319, 101761,
                    "weighted, 17472 hourly snapshots", 110 * kMiB));
  return all;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

}  // namespace

const std::vector<Dataset>& catalog() {
  static const std::vector<Dataset> all = make_catalog();
  return all;
}

const Dataset& find_dataset(const std::string& name) {
  for (const Dataset& d : catalog())
    if (lower(d.name) == lower(name)) return d;
  std::string names;
  for (const Dataset& d : catalog()) names += (names.empty() ? "" : ", ") + d.name;
  throw UserError(strformat("download: no dataset called \"%s\"; known: %s (halogen download --list)", name.c_str(),
                            names.c_str()));
}

}  // namespace halogen::download
