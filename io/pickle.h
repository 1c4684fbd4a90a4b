#pragma once
// A strict reader of the Python pickles that published datasets come as (the Planetoid ind.NAME.* files):
// NumPy arrays, SciPy CSR matrices and dicts of int lists, written by Python 2 (protocols 0-2) or Python 3
// (protocols 0-4; protocol 2 spells bytes as _codecs.encode(str, 'latin1')). No code is run: a GLOBAL must be
// one of the few names those objects use, and REDUCE/NEWOBJ/BUILD only record what they were given (the
// as_* functions below interpret the result). Every read is bounds-checked, nothing recurses on the input's
// nesting, and decoded bytes are capped at a multiple of the file's size: malformed, truncated or hostile
// input ends in one UserError "PATH: ..." naming the file (and the byte offset of the opcode).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace halogen::io::pickle {

struct Value {
  enum class Kind { kNone, kBool, kInt, kFloat, kBytes, kText, kTuple, kList, kDict, kGlobal, kObject };
  Kind kind = Kind::kNone;
  int64_t integer = 0;        // kBool (0/1), kInt
  double real = 0;            // kFloat
  std::string text;           // kBytes: raw bytes; kText: UTF-8; kGlobal: canonical "module.name"
  std::vector<Value*> items;  // kTuple, kList; kDict: key0, value0, key1, value1 ... in insertion order
                              // (a key set twice keeps its first place and its last value, as in Python)
  // kObject: made by REDUCE (callable `type`) or NEWOBJ (class `type`) with the tuple `args`; BUILD sets
  // `state`.
  const Value* type = nullptr;
  const Value* args = nullptr;
  const Value* state = nullptr;
  bool is_global(const char* name) const { return kind == Kind::kGlobal && text == name; }
};

// One unpickled file; owns every value (the memo may share them, and a hostile file may make cycles).
class Document {
 public:
  explicit Document(const std::string& path);  // reads and unpickles; UserError naming `path`
  ~Document();
  Document(const Document&) = delete;
  Document& operator=(const Document&) = delete;
  const std::string& path() const { return path_; }
  const Value& root() const { return *root_; }

 private:
  std::string path_;
  std::vector<std::unique_ptr<Value>> values_;
  const Value* root_ = nullptr;
  friend class Unpickler;
};

// What Python would call the value's type: "int", "list", "dict", "numpy.ndarray", "scipy.sparse.csr_matrix".
std::string type_name(const Value& value);

// A NumPy ndarray of booleans or numbers: its items in C order, little-endian.
struct Array {
  char kind = 0;      // 'b' bool, 'i' signed, 'u' unsigned, 'f' float
  int item_size = 0;  // bytes per item
  std::vector<int64_t> shape;
  std::string bytes;
  int64_t count() const { return item_size ? static_cast<int64_t>(bytes.size()) / item_size : 0; }
  std::vector<double> to_double() const;
  // UserError "<where>expected integers, found float ..." for float items; unsigned 64-bit beyond int64 too.
  std::vector<int64_t> to_int64(const std::string& where) const;
};

// numpy.core.multiarray._reconstruct(ndarray, ...) with its BUILD state (shape, dtype, Fortran order, raw
// bytes). UserError "<where>..." for anything else (object arrays, subclasses, strings, sizes that disagree).
Array as_ndarray(const Value& value, const std::string& where);

// A SciPy csr_matrix (its __dict__: _shape, indptr, indices, data), checked: indptr starts at 0, never
// decreases and ends at nnz; column ids lie in [0, cols).
struct CsrMatrix {
  int64_t rows = 0, cols = 0;
  std::vector<int64_t> indptr, indices;
  Array data;
};
CsrMatrix as_csr_matrix(const Value& value, const std::string& where);

}  // namespace halogen::io::pickle
