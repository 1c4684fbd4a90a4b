// libFuzzer target: io::pickle (the Planetoid pickles): a file is unpickled and its root interpreted as the
// Planetoid converter does (ndarray, csr_matrix, dict of lists). A UserError is the expected answer to bad
// input; anything else (a crash, a hang, a leak, an allocation beyond the limit) is a finding.
#include <cstdint>

#include "core/error.h"
#include "fuzz_input.h"
#include "io/pickle.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  halogen::fuzz::fix_available_memory();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace pickle = halogen::io::pickle;
  const std::string path = halogen::fuzz::write_file("ind.fuzz.x", data, size);
  try {
    const pickle::Document doc(path);
    const pickle::Value& root = doc.root();
    (void)pickle::type_name(root);
    if (root.kind == pickle::Value::Kind::kDict) {
      for (const pickle::Value* entry : root.items) (void)pickle::type_name(*entry);
    } else if (root.kind == pickle::Value::Kind::kObject && root.type->is_global("scipy.sparse.csr_matrix")) {
      const pickle::CsrMatrix m = pickle::as_csr_matrix(root, path + ": ");
      (void)m.data.to_double();
    } else {
      const pickle::Array array = pickle::as_ndarray(root, path + ": ");
      (void)array.to_double();
      (void)array.to_int64(path + ": ");
    }
  } catch (const halogen::UserError&) {
  }
  return 0;
}
