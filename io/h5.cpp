#include "io/h5.h"

#include <hdf5.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <type_traits>

#include "core/error.h"
#include "io/input_file.h"

namespace halogen::h5 {

Handle& Handle::operator=(Handle&& other) noexcept {
  if (this != &other) {
    reset();
    id_ = other.id_;
    closer_ = other.closer_;
    other.id_ = -1;
  }
  return *this;
}

void Handle::reset() {
  if (id_ >= 0 && closer_) closer_(id_);
  id_ = -1;
}

void quiet_hdf5_errors() {
  static const bool done = [] {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    return true;
  }();
  (void)done;
}

namespace {

template <typename T>
hid_t native_type() {
  if constexpr (std::is_same_v<T, float>) return H5T_NATIVE_FLOAT;
  else if constexpr (std::is_same_v<T, double>) return H5T_NATIVE_DOUBLE;
  else if constexpr (std::is_same_v<T, int64_t>) return H5T_NATIVE_INT64;
  else if constexpr (std::is_same_v<T, int32_t>) return H5T_NATIVE_INT32;
  else if constexpr (std::is_same_v<T, uint8_t>) return H5T_NATIVE_UINT8;
  else static_assert(sizeof(T) == 0, "unsupported HDF5 element type");
}

template <typename T>
const char* type_name() {
  if constexpr (std::is_same_v<T, float>) return "float32";
  else if constexpr (std::is_same_v<T, double>) return "float64";
  else if constexpr (std::is_same_v<T, int64_t>) return "int64";
  else if constexpr (std::is_same_v<T, int32_t>) return "int32";
  else return "uint8";
}

std::string describe_type(hid_t type) {
  const H5T_class_t cls = H5Tget_class(type);
  const size_t size = H5Tget_size(type);
  if (cls == H5T_INTEGER) return (H5Tget_sign(type) == H5T_SGN_NONE ? "uint" : "int") + std::to_string(8 * size);
  if (cls == H5T_FLOAT) return "float" + std::to_string(8 * size);
  if (cls == H5T_STRING) return "string";
  return "type class " + std::to_string(static_cast<int>(cls));
}

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

// Whether a stored type may be read into T (see File::read's contract).
template <typename T>
bool compatible(hid_t stored) {
  const H5T_class_t cls = H5Tget_class(stored);
  if constexpr (std::is_floating_point_v<T>) return cls == H5T_FLOAT;
  else return cls == H5T_INTEGER;
}

void make_parents(hid_t file, const std::string& path) {
  for (size_t pos = path.find('/', 1); pos != std::string::npos; pos = path.find('/', pos + 1)) {
    const std::string group = path.substr(0, pos);
    if (H5Lexists(file, group.c_str(), H5P_DEFAULT) > 0) continue;
    Handle created(H5Gcreate2(file, group.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
    if (!created.valid()) throw UserError("cannot create group " + group);
  }
}

}  // namespace

File::File(const std::string& path, Mode mode) : path_(path) {
  quiet_hdf5_errors();
  hid_t id;
  if (mode == Mode::read) {
    io::check_input_file(path);
    if (H5Fis_hdf5(path.c_str()) <= 0) {
      throw UserError(path + ": not a readable HDF5 file (truncated or another format)");
    }
    id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  } else {
    id = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  }
  if (id < 0) throw UserError(path + (mode == Mode::read ? ": cannot open for reading" : ": cannot create"));
  handle_ = Handle(id, H5Fclose);
}

bool File::exists(const std::string& object_path) const {
  // Check each prefix: H5Lexists fails (rather than returning 0) when an intermediate group is missing.
  for (size_t pos = object_path.find('/', 1);; pos = object_path.find('/', pos + 1)) {
    const std::string prefix = object_path.substr(0, pos);
    if (H5Lexists(id(), prefix.c_str(), H5P_DEFAULT) <= 0) return false;
    if (pos == std::string::npos) return true;
  }
}

std::vector<int64_t> File::shape(const std::string& dataset) const {
  if (!exists(dataset)) throw UserError(path_ + ": " + dataset + ": missing");
  Handle ds(H5Dopen2(id(), dataset.c_str(), H5P_DEFAULT), H5Dclose);
  if (!ds.valid()) throw UserError(path_ + ": " + dataset + ": not a dataset");
  Handle space(H5Dget_space(ds.id()), H5Sclose);
  const int rank = H5Sget_simple_extent_ndims(space.id());
  std::vector<hsize_t> dims(std::max(rank, 0));
  H5Sget_simple_extent_dims(space.id(), dims.data(), nullptr);
  return std::vector<int64_t>(dims.begin(), dims.end());
}

template <typename T>
void File::write(const std::string& dataset, const T* data, const std::vector<int64_t>& dims, bool compress) {
  make_parents(id(), dataset);
  std::vector<hsize_t> hdims(dims.begin(), dims.end());
  Handle space(H5Screate_simple(static_cast<int>(hdims.size()), hdims.data(), nullptr), H5Sclose);
  Handle plist(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  if (compress && total > 0) {
    // Chunks of about 1 MiB along the first dimension keep row-range reads cheap.
    std::vector<hsize_t> chunk = hdims;
    int64_t row_elems = 1;
    for (size_t i = 1; i < hdims.size(); ++i) row_elems *= static_cast<int64_t>(hdims[i]);
    const int64_t rows = std::max<int64_t>(1, (1 << 20) / static_cast<int64_t>(sizeof(T)) / std::max<int64_t>(row_elems, 1));
    chunk[0] = static_cast<hsize_t>(std::min<int64_t>(rows, static_cast<int64_t>(hdims[0])));
    H5Pset_chunk(plist.id(), static_cast<int>(chunk.size()), chunk.data());
    H5Pset_deflate(plist.id(), 1);
  }
  Handle ds(H5Dcreate2(id(), dataset.c_str(), native_type<T>(), space.id(), H5P_DEFAULT, plist.id(), H5P_DEFAULT),
            H5Dclose);
  if (!ds.valid()) throw UserError(path_ + ": " + dataset + ": cannot create dataset");
  if (total > 0 && H5Dwrite(ds.id(), native_type<T>(), H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0) {
    throw UserError(path_ + ": " + dataset + ": write failed (disk full?)");
  }
}

namespace {
struct OpenDataset {
  Handle ds, type, space;
  std::vector<int64_t> dims;
};

template <typename T>
OpenDataset open_checked(hid_t file, const std::string& path, const std::string& dataset, const File& f) {
  if (!f.exists(dataset)) throw UserError(path + ": " + dataset + ": missing");
  OpenDataset o;
  o.ds = Handle(H5Dopen2(file, dataset.c_str(), H5P_DEFAULT), H5Dclose);
  if (!o.ds.valid()) throw UserError(path + ": " + dataset + ": not a dataset");
  o.type = Handle(H5Dget_type(o.ds.id()), H5Tclose);
  o.space = Handle(H5Dget_space(o.ds.id()), H5Sclose);
  const int rank = H5Sget_simple_extent_ndims(o.space.id());
  std::vector<hsize_t> dims(std::max(rank, 0));
  H5Sget_simple_extent_dims(o.space.id(), dims.data(), nullptr);
  o.dims.assign(dims.begin(), dims.end());
  if (!compatible<T>(o.type.id())) {
    throw UserError(path + ": " + dataset + ": expected " + type_name<T>() + ", found " +
                    describe_type(o.type.id()) + " " + dims_text(o.dims));
  }
  return o;
}

// Reads through int64/double staging when the stored width differs, then checks the range.
template <typename T>
void read_into(const OpenDataset& o, hid_t memspace, hid_t filespace, T* out, int64_t count, const std::string& where) {
  if constexpr (std::is_integral_v<T>) {
    if (sizeof(T) < 8 && H5Tget_size(o.type.id()) > sizeof(T)) {
      std::vector<int64_t> wide(count);
      if (count > 0 && H5Dread(o.ds.id(), H5T_NATIVE_INT64, memspace, filespace, H5P_DEFAULT, wide.data()) < 0)
        throw UserError(where + ": read failed (corrupt or truncated file)");
      for (int64_t i = 0; i < count; ++i) {
        if (wide[i] < std::numeric_limits<T>::min() || wide[i] > std::numeric_limits<T>::max())
          throw UserError(where + ": value " + std::to_string(wide[i]) + " at index " + std::to_string(i) +
                          " does not fit " + type_name<T>());
        out[i] = static_cast<T>(wide[i]);
      }
      return;
    }
  }
  if (count > 0 && H5Dread(o.ds.id(), native_type<T>(), memspace, filespace, H5P_DEFAULT, out) < 0)
    throw UserError(where + ": read failed (corrupt or truncated file)");
}
}  // namespace

template <typename T>
std::vector<T> File::read(const std::string& dataset, std::vector<int64_t>* dims) const {
  OpenDataset o = open_checked<T>(id(), path_, dataset, *this);
  int64_t total = 1;
  for (int64_t d : o.dims) total *= d;
  std::vector<T> out(static_cast<size_t>(total));
  read_into<T>(o, H5S_ALL, H5S_ALL, out.data(), total, path_ + ": " + dataset);
  if (dims) *dims = o.dims;
  return out;
}

template <typename T>
std::vector<T> File::read_rows(const std::string& dataset, int64_t row_begin, int64_t row_end) const {
  OpenDataset o = open_checked<T>(id(), path_, dataset, *this);
  if (o.dims.empty() || row_begin < 0 || row_end < row_begin || row_end > o.dims[0])
    throw UserError(path_ + ": " + dataset + ": rows [" + std::to_string(row_begin) + "," +
                    std::to_string(row_end) + ") out of range " + dims_text(o.dims));
  std::vector<hsize_t> start(o.dims.size(), 0), count(o.dims.begin(), o.dims.end());
  start[0] = static_cast<hsize_t>(row_begin);
  count[0] = static_cast<hsize_t>(row_end - row_begin);
  int64_t total = 1;
  for (hsize_t c : count) total *= static_cast<int64_t>(c);
  std::vector<T> out(static_cast<size_t>(total));
  if (total == 0) return out;
  H5Sselect_hyperslab(o.space.id(), H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr);
  Handle mem(H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr), H5Sclose);
  read_into<T>(o, mem.id(), o.space.id(), out.data(), total, path_ + ": " + dataset);
  return out;
}

template <typename T>
std::vector<T> File::read_selected_rows(const std::string& dataset, const std::vector<int64_t>& rows) const {
  OpenDataset o = open_checked<T>(id(), path_, dataset, *this);
  if (o.dims.empty()) throw UserError(path_ + ": " + dataset + ": scalar dataset");
  int64_t row_elems = 1;
  for (size_t i = 1; i < o.dims.size(); ++i) row_elems *= o.dims[i];
  std::vector<T> out(rows.size() * static_cast<size_t>(row_elems));
  if (rows.empty() || row_elems == 0) return out;
  // Runs of consecutive rows become one hyperslab each (OR-ed), which HDF5 reads efficiently.
  H5Sselect_none(o.space.id());
  std::vector<hsize_t> start(o.dims.size(), 0), count(o.dims.begin(), o.dims.end());
  for (size_t i = 0; i < rows.size();) {
    size_t j = i + 1;
    while (j < rows.size() && rows[j] == rows[j - 1] + 1) ++j;
    if (rows[i] < 0 || rows[j - 1] >= o.dims[0])
      throw UserError(path_ + ": " + dataset + ": row " + std::to_string(rows[i]) + " out of range");
    start[0] = static_cast<hsize_t>(rows[i]);
    count[0] = static_cast<hsize_t>(j - i);
    H5Sselect_hyperslab(o.space.id(), H5S_SELECT_OR, start.data(), nullptr, count.data(), nullptr);
    i = j;
  }
  const hsize_t mem_count = static_cast<hsize_t>(out.size());
  Handle mem(H5Screate_simple(1, &mem_count, nullptr), H5Sclose);
  read_into<T>(o, mem.id(), o.space.id(), out.data(), static_cast<int64_t>(out.size()), path_ + ": " + dataset);
  return out;
}

namespace {
Handle open_object(hid_t file, const std::string& object) {
  return Handle(H5Oopen(file, object.c_str(), H5P_DEFAULT), H5Oclose);
}

void write_attr(hid_t file, const std::string& object, const std::string& name, hid_t type, const void* value) {
  Handle obj = open_object(file, object);
  if (!obj.valid()) throw UserError("cannot open " + object + " for attribute " + name);
  if (H5Aexists(obj.id(), name.c_str()) > 0) H5Adelete(obj.id(), name.c_str());
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  Handle attr(H5Acreate2(obj.id(), name.c_str(), type, space.id(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  if (!attr.valid() || H5Awrite(attr.id(), type, value) < 0) throw UserError("cannot write attribute " + name);
}
}  // namespace

void File::set_attr(const std::string& name, const std::string& value, const std::string& object) {
  Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.id(), std::max<size_t>(value.size(), 1));
  H5Tset_cset(type.id(), H5T_CSET_UTF8);
  write_attr(id(), object, name, type.id(), value.empty() ? "" : value.data());
}

void File::set_attr(const std::string& name, int64_t value, const std::string& object) {
  write_attr(id(), object, name, H5T_NATIVE_INT64, &value);
}

void File::set_attr(const std::string& name, double value, const std::string& object) {
  write_attr(id(), object, name, H5T_NATIVE_DOUBLE, &value);
}

bool File::has_attr(const std::string& name, const std::string& object) const {
  if (object != "/" && !exists(object)) return false;
  Handle obj = open_object(id(), object);
  return obj.valid() && H5Aexists(obj.id(), name.c_str()) > 0;
}

namespace {
Handle open_attr(const File& f, const std::string& object, const std::string& name) {
  if (!f.has_attr(name, object)) throw UserError(f.path() + ": attribute " + object + "@" + name + " missing");
  Handle obj = open_object(f.id(), object);
  return Handle(H5Aopen(obj.id(), name.c_str(), H5P_DEFAULT), H5Aclose);
}
}  // namespace

std::string File::attr_string(const std::string& name, const std::string& object) const {
  Handle attr = open_attr(*this, object, name);
  Handle type(H5Aget_type(attr.id()), H5Tclose);
  if (H5Tget_class(type.id()) != H5T_STRING)
    throw UserError(path_ + ": attribute " + object + "@" + name + " is not a string");
  if (H5Tis_variable_str(type.id()) > 0) {
    char* value = nullptr;
    Handle mem(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(mem.id(), H5T_VARIABLE);
    H5Tset_cset(mem.id(), H5Tget_cset(type.id()));  // HDF5 does not convert between ASCII and UTF-8
    if (H5Aread(attr.id(), mem.id(), &value) < 0) throw UserError(path_ + ": cannot read attribute " + name);
    std::string out = value ? value : "";
    H5free_memory(value);
    return out;
  }
  const size_t size = H5Tget_size(type.id());
  std::string out(size, '\0');
  Handle mem(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(mem.id(), size + 1);
  H5Tset_cset(mem.id(), H5Tget_cset(type.id()));  // HDF5 does not convert between ASCII and UTF-8
  std::vector<char> buffer(size + 1, '\0');
  if (H5Aread(attr.id(), mem.id(), buffer.data()) < 0) throw UserError(path_ + ": cannot read attribute " + name);
  out.assign(buffer.data());
  return out;
}

int64_t File::attr_int(const std::string& name, const std::string& object) const {
  Handle attr = open_attr(*this, object, name);
  Handle type(H5Aget_type(attr.id()), H5Tclose);
  if (H5Tget_class(type.id()) != H5T_INTEGER)
    throw UserError(path_ + ": attribute " + object + "@" + name + " is not an integer");
  int64_t value = 0;
  if (H5Aread(attr.id(), H5T_NATIVE_INT64, &value) < 0) throw UserError(path_ + ": cannot read attribute " + name);
  return value;
}

double File::attr_double(const std::string& name, const std::string& object) const {
  Handle attr = open_attr(*this, object, name);
  double value = 0;
  if (H5Aread(attr.id(), H5T_NATIVE_DOUBLE, &value) < 0) throw UserError(path_ + ": cannot read attribute " + name);
  return value;
}

std::vector<std::string> File::list(const std::string& group) const {
  std::vector<std::string> names;
  if (!exists(group) && group != "/") return names;
  Handle g(H5Gopen2(id(), group.c_str(), H5P_DEFAULT), H5Gclose);
  if (!g.valid()) return names;
  H5G_info_t info;
  H5Gget_info(g.id(), &info);
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    const ssize_t len = H5Lget_name_by_idx(g.id(), ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    std::string name(static_cast<size_t>(std::max<ssize_t>(len, 0)), '\0');
    H5Lget_name_by_idx(g.id(), ".", H5_INDEX_NAME, H5_ITER_INC, i, name.data(), name.size() + 1, H5P_DEFAULT);
    names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool File::is_group(const std::string& object_path) const {
  if (object_path != "/" && !exists(object_path)) return false;
  Handle group(H5Gopen2(id(), object_path.c_str(), H5P_DEFAULT), H5Gclose);
  return group.valid();
}

std::string File::element_type(const std::string& dataset) const {
  if (!exists(dataset)) throw UserError(path_ + ": " + dataset + ": missing");
  Handle ds(H5Dopen2(id(), dataset.c_str(), H5P_DEFAULT), H5Dclose);
  if (!ds.valid()) throw UserError(path_ + ": " + dataset + ": not a dataset");
  Handle type(H5Dget_type(ds.id()), H5Tclose);
  return describe_type(type.id());
}

bool File::is_floating(const std::string& dataset) const { return element_type(dataset).rfind("float", 0) == 0; }

int64_t File::storage_bytes(const std::string& dataset) const {
  if (!exists(dataset)) throw UserError(path_ + ": " + dataset + ": missing");
  Handle ds(H5Dopen2(id(), dataset.c_str(), H5P_DEFAULT), H5Dclose);
  if (!ds.valid()) throw UserError(path_ + ": " + dataset + ": not a dataset");
  return static_cast<int64_t>(H5Dget_storage_size(ds.id()));
}

#define HALOGEN_H5_INSTANTIATE(T)                                                                        \
  template void File::write<T>(const std::string&, const T*, const std::vector<int64_t>&, bool);         \
  template std::vector<T> File::read<T>(const std::string&, std::vector<int64_t>*) const;                \
  template std::vector<T> File::read_rows<T>(const std::string&, int64_t, int64_t) const;                \
  template std::vector<T> File::read_selected_rows<T>(const std::string&, const std::vector<int64_t>&) const;
HALOGEN_H5_INSTANTIATE(float)
HALOGEN_H5_INSTANTIATE(double)
HALOGEN_H5_INSTANTIATE(int64_t)
HALOGEN_H5_INSTANTIATE(int32_t)
HALOGEN_H5_INSTANTIATE(uint8_t)
#undef HALOGEN_H5_INSTANTIATE

}  // namespace halogen::h5
