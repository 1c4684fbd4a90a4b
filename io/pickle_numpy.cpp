// The NumPy and SciPy objects of io/pickle.h: ndarray from _reconstruct + BUILD state, csr_matrix from its
// __dict__. Everything is checked against the sizes it claims before it is used.
#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>

#include "core/error.h"
#include "io/numpy_dtype.h"
#include "io/pickle.h"

namespace halogen::io::pickle {

namespace {

using Kind = Value::Kind;

const Value& item(const Value& tuple, size_t i) {
  return *tuple.items[i];
}

bool is_string(const Value& v) {
  return v.kind == Kind::kText || v.kind == Kind::kBytes;
}

// numpy.dtype(('f4', False, True)) with BUILD state (version, byte order, ...): kind, item size, byte order.
void parse_dtype(const Value& dtype, const std::string& where, Array* array, char* order) {
  HALOGEN_USER_CHECK(dtype.kind == Kind::kObject && dtype.type->is_global("numpy.dtype") &&
                         !dtype.args->items.empty() && is_string(item(*dtype.args, 0)),
                     "%sexpected a numpy dtype in the array state, found %s", where.c_str(),
                     type_name(dtype).c_str());
  const std::string& code = item(*dtype.args, 0).text;
  const bool known = code.size() == 2 && std::strchr("biuf", code[0]) && std::strchr("1248", code[1]) &&
                     (code[0] != 'f' || code[1] == '4' || code[1] == '8') &&
                     (code[0] != 'b' || code[1] == '1');
  HALOGEN_USER_CHECK(known, "%sdtype '%s' is not read (bool, integers, float32, float64)", where.c_str(),
                     code.substr(0, 20).c_str());
  array->kind = code[0];
  array->item_size = code[1] - '0';
  *order = '|';
  if (dtype.state) {
    const Value& state = *dtype.state;
    HALOGEN_USER_CHECK(state.kind == Kind::kTuple && state.items.size() >= 2 && is_string(item(state, 1)) &&
                           item(state, 1).text.size() == 1,
                       "%smalformed dtype state", where.c_str());
    *order = item(state, 1).text[0];
    HALOGEN_USER_CHECK(std::strchr("<>|=", *order), "%smalformed dtype byte order", where.c_str());
  }
}

}  // namespace

Array as_ndarray(const Value& value, const std::string& where) {
  HALOGEN_USER_CHECK(
      value.kind == Kind::kObject && value.type->is_global("numpy.core.multiarray._reconstruct"),
      "%sexpected a numpy array, found %s", where.c_str(), type_name(value).c_str());
  HALOGEN_USER_CHECK(!value.args->items.empty() && item(*value.args, 0).is_global("numpy.ndarray"),
                     "%sexpected a plain numpy.ndarray (not a subclass)", where.c_str());
  HALOGEN_USER_CHECK(value.state && value.state->kind == Kind::kTuple &&
                         (value.state->items.size() == 5 || value.state->items.size() == 4),
                     "%snumpy array without its state (shape, dtype, data)", where.c_str());
  const size_t first = value.state->items.size() == 5 ? 1 : 0;  // version 1 states start with the version
  const Value& shape = item(*value.state, first);
  const Value& dtype = item(*value.state, first + 1);
  const Value& fortran = item(*value.state, first + 2);
  const Value& data = item(*value.state, first + 3);
  Array array;
  char order = '|';
  parse_dtype(dtype, where, &array, &order);
  HALOGEN_USER_CHECK(shape.kind == Kind::kTuple, "%snumpy array shape is not a tuple", where.c_str());
  int64_t count = 1;
  for (const Value* dim : shape.items) {
    HALOGEN_USER_CHECK(dim->kind == Kind::kInt && dim->integer >= 0 && dim->integer < (int64_t{1} << 40),
                       "%smalformed numpy array shape", where.c_str());
    array.shape.push_back(dim->integer);
    HALOGEN_USER_CHECK(dim->integer == 0 || count <= (int64_t{1} << 40) / dim->integer,
                       "%snumpy array shape %s is implausibly large", where.c_str(),
                       numpy_shape_text(array.shape).c_str());
    count *= dim->integer;
  }
  HALOGEN_USER_CHECK(data.kind == Kind::kBytes, "%snumpy array of %s items is not read (numbers only)",
                     where.c_str(), type_name(data).c_str());
  HALOGEN_USER_CHECK(static_cast<int64_t>(data.text.size()) == count * array.item_size,
                     "%snumpy array of shape %s holds %zu bytes, expected %lld", where.c_str(),
                     numpy_shape_text(array.shape).c_str(), data.text.size(),
                     static_cast<long long>(count * array.item_size));
  array.bytes = data.text;
  if (order == '>' && array.item_size > 1) {
    for (size_t i = 0; i < array.bytes.size(); i += static_cast<size_t>(array.item_size))
      std::reverse(array.bytes.begin() + static_cast<std::ptrdiff_t>(i),
                   array.bytes.begin() + static_cast<std::ptrdiff_t>(i) + array.item_size);
  }
  const bool is_fortran = (fortran.kind == Kind::kBool || fortran.kind == Kind::kInt) && fortran.integer != 0;
  if (is_fortran && array.shape.size() >= 2) {
    HALOGEN_USER_CHECK(array.shape.size() == 2, "%sFortran-ordered array of %zu dimensions is not read",
                       where.c_str(), array.shape.size());
    const int64_t rows = array.shape[0], cols = array.shape[1];
    const size_t size = static_cast<size_t>(array.item_size);
    std::string c_order(array.bytes.size(), '\0');
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        std::memcpy(&c_order[static_cast<size_t>(r * cols + c) * size],
                    &array.bytes[static_cast<size_t>(c * rows + r) * size], size);
    array.bytes = std::move(c_order);
  }
  return array;
}

std::vector<double> Array::to_double() const {
  std::vector<double> out(static_cast<size_t>(count()));
  const bool known = visit_numpy_dtype(kind, item_size, [&](auto stored) {
    using Stored = decltype(stored);
    for (size_t i = 0; i < out.size(); ++i)
      out[i] = static_cast<double>(load_element<Stored>(bytes.data(), static_cast<int64_t>(i)));
  });
  HALOGEN_ASSERT(known, "array of dtype %c%d", kind, item_size);  // parse_dtype admits only visited dtypes
  return out;
}

std::vector<int64_t> Array::to_int64(const std::string& where) const {
  HALOGEN_USER_CHECK(kind != 'f', "%sexpected integers, found float%d values", where.c_str(), 8 * item_size);
  std::vector<int64_t> out(static_cast<size_t>(count()));
  const bool known = visit_numpy_dtype(kind, item_size, [&](auto stored) {
    using Stored = decltype(stored);
    for (size_t i = 0; i < out.size(); ++i) {
      const Stored v = load_element<Stored>(bytes.data(), static_cast<int64_t>(i));
      if constexpr (std::is_same_v<Stored, uint64_t>)
        HALOGEN_USER_CHECK(v <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()),
                           "%sindex %zu: value %llu out of range", where.c_str(), i,
                           static_cast<unsigned long long>(v));
      out[i] = static_cast<int64_t>(v);
    }
  });
  HALOGEN_ASSERT(known, "array of dtype %c%d", kind, item_size);
  return out;
}

CsrMatrix as_csr_matrix(const Value& value, const std::string& where) {
  HALOGEN_USER_CHECK(value.kind == Kind::kObject && value.type->is_global("scipy.sparse.csr_matrix"),
                     "%sexpected a scipy.sparse.csr_matrix, found %s", where.c_str(),
                     type_name(value).c_str());
  HALOGEN_USER_CHECK(value.state && value.state->kind == Kind::kDict,
                     "%scsr_matrix without its attributes (__dict__)", where.c_str());
  const Value *shape = nullptr, *indptr = nullptr, *indices = nullptr, *data = nullptr;
  const auto& entries = value.state->items;
  for (size_t i = 0; i + 1 < entries.size(); i += 2) {
    if (!is_string(*entries[i])) continue;
    const std::string& key = entries[i]->text;
    if (key == "_shape" || key == "shape")
      shape = entries[i + 1];
    else if (key == "indptr")
      indptr = entries[i + 1];
    else if (key == "indices")
      indices = entries[i + 1];
    else if (key == "data")
      data = entries[i + 1];
  }
  HALOGEN_USER_CHECK(shape && indptr && indices && data,
                     "%scsr_matrix lacks one of _shape, indptr, indices, data", where.c_str());
  HALOGEN_USER_CHECK(shape->kind == Kind::kTuple && shape->items.size() == 2 &&
                         item(*shape, 0).kind == Kind::kInt && item(*shape, 1).kind == Kind::kInt &&
                         item(*shape, 0).integer >= 0 && item(*shape, 1).integer >= 0,
                     "%scsr_matrix _shape: expected (rows, columns)", where.c_str());
  CsrMatrix m;
  m.rows = item(*shape, 0).integer;
  m.cols = item(*shape, 1).integer;
  m.indptr = as_ndarray(*indptr, where + "indptr: ").to_int64(where + "indptr: ");
  m.indices = as_ndarray(*indices, where + "indices: ").to_int64(where + "indices: ");
  m.data = as_ndarray(*data, where + "data: ");
  const int64_t nnz = static_cast<int64_t>(m.indices.size());
  HALOGEN_USER_CHECK(static_cast<int64_t>(m.indptr.size()) == m.rows + 1,
                     "%sindptr: %zu entries for %lld rows (expected rows + 1)", where.c_str(),
                     m.indptr.size(), static_cast<long long>(m.rows));
  HALOGEN_USER_CHECK(m.data.count() == nnz, "%sdata: %lld values for %lld column indices", where.c_str(),
                     static_cast<long long>(m.data.count()), static_cast<long long>(nnz));
  HALOGEN_USER_CHECK(m.indptr[0] == 0 && m.indptr.back() == nnz,
                     "%sindptr: must start at 0 and end at %lld (the number of stored values)", where.c_str(),
                     static_cast<long long>(nnz));
  for (int64_t r = 0; r < m.rows; ++r) {
    HALOGEN_USER_CHECK(m.indptr[r] <= m.indptr[r + 1], "%sindptr: decreases at index %lld", where.c_str(),
                       static_cast<long long>(r + 1));
  }
  for (int64_t k = 0; k < nnz; ++k) {
    HALOGEN_USER_CHECK(m.indices[k] >= 0 && m.indices[k] < m.cols,
                       "%sindices: index %lld: column %lld out of range [0, %lld)", where.c_str(),
                       static_cast<long long>(k), static_cast<long long>(m.indices[k]),
                       static_cast<long long>(m.cols));
  }
  return m;
}

}  // namespace halogen::io::pickle
