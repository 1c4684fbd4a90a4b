#pragma once
// NumPy's numeric dtypes as C++ types, for the readers of NumPy data: .npy members of .npz archives
// (io/npz.h) and arrays inside pickles (io/pickle.h). One dispatch over (kind, item size), one element load,
// and numpy's spelling of a shape.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace halogen::io {

// Calls f(Stored{}) where Stored is the C++ type of the numpy dtype (kind, item_size): 'b' 1 (bool, read as
// uint8), 'i' and 'u' 1/2/4/8, 'f' 4/8. Returns false, without calling f, for any other dtype (half floats
// included: a caller that reads them converts them itself).
template <typename F>
bool visit_numpy_dtype(char kind, int item_size, F&& f) {
  switch (item_size * 256 + static_cast<unsigned char>(kind)) {
    case 1 * 256 + 'b':
    case 1 * 256 + 'u': f(uint8_t{}); return true;
    case 2 * 256 + 'u': f(uint16_t{}); return true;
    case 4 * 256 + 'u': f(uint32_t{}); return true;
    case 8 * 256 + 'u': f(uint64_t{}); return true;
    case 1 * 256 + 'i': f(int8_t{}); return true;
    case 2 * 256 + 'i': f(int16_t{}); return true;
    case 4 * 256 + 'i': f(int32_t{}); return true;
    case 8 * 256 + 'i': f(int64_t{}); return true;
    case 4 * 256 + 'f': f(float{}); return true;
    case 8 * 256 + 'f': f(double{}); return true;
    default: return false;
  }
}

// Element i of an array of Stored at `data` (host byte order, possibly unaligned).
template <typename Stored>
Stored load_element(const void* data, int64_t i) {
  Stored v;
  std::memcpy(&v, static_cast<const char*>(data) + i * static_cast<int64_t>(sizeof(Stored)), sizeof v);
  return v;
}

// A shape as numpy prints it: "(3, 4)", and "(3,)" for one dimension.
inline std::string numpy_shape_text(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

}  // namespace halogen::io
