#include "io/h5.h"

#include <hdf5.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
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
    // No library shutdown at exit: HDF5's atexit handler closes every file still open, and a file whose
    // close already failed (a full disk) makes it crash (SIGSEGV in H5F__close_cb). Outputs are written to
    // temporaries and renamed only after a successful close (io/atomic_file.h), so a file still open at exit
    // holds nothing worth flushing. Must precede the library's initialisation (the first H5 call).
    H5dont_atexit();
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
  if (cls == H5T_ENUM) return "enum (numpy bool, as h5py writes it)";
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
    // No access/modification times in the object headers: the same content gives the same bytes (a graph file
    // from `download` equals `convert`'s; rewrites are reproducible).
    Handle gcpl(H5Pcreate(H5P_GROUP_CREATE), H5Pclose);
    H5Pset_obj_track_times(gcpl.id(), 0);
    Handle created(H5Gcreate2(file, group.c_str(), H5P_DEFAULT, gcpl.id(), H5P_DEFAULT), H5Gclose);
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
    // The 1.10 file format: its metadata is checksummed too (superblock, object headers, chunk indexes), so a
    // corrupt header is refused rather than misread, and a dataset of one chunk is indexed in its header
    // (the 1.8 format's B-tree costs ~2.5 KB per chunked dataset). HDF5 >= 1.10 (h5py too) reads these files.
    Handle access(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
    H5Pset_libver_bounds(access.id(), H5F_LIBVER_V110, H5F_LIBVER_LATEST);
    Handle create(H5Pcreate(H5P_FILE_CREATE), H5Pclose);
    H5Pset_obj_track_times(create.id(), 0);  // the root group's header: no times either (see make_parents)
    id = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, create.id(), access.id());
  }
  if (id < 0) throw UserError(path + (mode == Mode::read ? ": cannot open for reading" : ": cannot create"));
  handle_ = Handle(id, H5Fclose);
}

void File::close() {
  if (!handle_.valid()) return;
  if (H5Fclose(static_cast<hid_t>(handle_.release())) < 0)
    throw UserError(path_ + ": cannot finish writing the file (disk full?)");
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

namespace {

// Scalar datasets carry the CRC-32 (zlib) of their value's bytes in this attribute.
constexpr const char* kScalarChecksum = "crc32";

uint32_t scalar_crc32(const void* value, size_t bytes) {
  return static_cast<uint32_t>(crc32(0L, static_cast<const Bytef*>(value), static_cast<uInt>(bytes)));
}

// Chunk shape of about kChunkBytes: trailing dimensions are kept whole while they fit, so a chunk is a block
// of whole rows (row-range reads touch few chunks); a dimension that does not fit is cut and the ones before
// it become 1.
std::vector<hsize_t> chunk_shape(const std::vector<hsize_t>& dims, size_t element_bytes) {
  constexpr int64_t kChunkBytes = 1 << 20;
  std::vector<hsize_t> chunk(dims.size(), 1);
  int64_t budget = std::max<int64_t>(1, kChunkBytes / static_cast<int64_t>(element_bytes));  // elements
  for (size_t i = dims.size(); i-- > 0;) {
    const int64_t extent = static_cast<int64_t>(dims[i]);
    chunk[i] = static_cast<hsize_t>(std::max<int64_t>(1, std::min(extent, budget)));
    if (extent > budget) break;  // cut here: the dimensions before stay 1
    budget /= std::max<int64_t>(extent, 1);
  }
  return chunk;
}

}  // namespace

namespace {

// Creates `dataset` as File::write does (intermediate groups; chunked with Fletcher-32, deflated first when
// `compress`, when it holds data); returns the open dataset.
Handle create_dataset(hid_t file, const std::string& path, const std::string& dataset, hid_t type,
                      size_t element_bytes, const std::vector<int64_t>& dims, bool compress) {
  make_parents(file, dataset);
  std::vector<hsize_t> hdims(dims.begin(), dims.end());
  Handle space(H5Screate_simple(static_cast<int>(hdims.size()), hdims.data(), nullptr), H5Sclose);
  Handle plist(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  H5Pset_obj_track_times(plist.id(), 0);  // reproducible bytes (see make_parents)
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  if (total > 0 && !hdims.empty()) {
    // Chunked, so that HDF5's Fletcher-32 filter can checksum each chunk; HDF5 verifies it on every read of
    // the chunk (whole or partial reads alike). Deflate goes first, so the checksum covers the stored bytes
    // and a corrupt byte reads as a checksum mismatch, not as a zlib error.
    const std::vector<hsize_t> chunk = chunk_shape(hdims, element_bytes);
    bool ok = H5Pset_chunk(plist.id(), static_cast<int>(chunk.size()), chunk.data()) >= 0;
    if (compress) ok = ok && H5Pset_deflate(plist.id(), 1) >= 0;
    ok = ok && H5Pset_fletcher32(plist.id()) >= 0;
    if (!ok) throw UserError(path + ": " + dataset + ": cannot set up chunking and the Fletcher-32 checksum");
  }
  Handle ds(H5Dcreate2(file, dataset.c_str(), type, space.id(), H5P_DEFAULT, plist.id(), H5P_DEFAULT),
            H5Dclose);
  if (!ds.valid()) throw UserError(path + ": " + dataset + ": cannot create dataset");
  return ds;
}

}  // namespace

template <typename T>
void File::write(const std::string& dataset, const T* data, const std::vector<int64_t>& dims, bool compress) {
  Handle ds = create_dataset(id(), path_, dataset, native_type<T>(), sizeof(T), dims, compress);
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  if (total > 0 && H5Dwrite(ds.id(), native_type<T>(), H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0) {
    throw UserError(path_ + ": " + dataset + ": write failed (disk full?)");
  }
  if (dims.empty()) {  // a scalar cannot be chunked (no filters): its CRC-32 goes into an attribute
    ds.reset();
    set_attr(kScalarChecksum, static_cast<int64_t>(scalar_crc32(data, sizeof(T))), dataset);
  }
}

template <typename T>
DatasetWriter<T>::DatasetWriter(File& file, const std::string& dataset, const std::vector<int64_t>& dims,
                                bool compress)
    : path_(file.path()), dataset_(dataset), dims_(dims) {
  if (dims_.empty()) throw UserError(path_ + ": " + dataset_ + ": a scalar cannot be written in rows");
  handle_ = create_dataset(file.id(), path_, dataset_, native_type<T>(), sizeof(T), dims_, compress);
  row_elements_ = 1;
  for (size_t i = 1; i < dims_.size(); ++i) row_elements_ *= dims_[i];
  std::vector<hsize_t> hdims(dims_.begin(), dims_.end());
  // One chunk's rows per block (a row cut across chunks: one row), so every H5Dwrite covers whole chunks and
  // HDF5 never reads a filtered chunk back to complete it.
  const std::vector<hsize_t> chunk = chunk_shape(hdims, sizeof(T));
  block_rows_ = std::max<int64_t>(1, static_cast<int64_t>(chunk[0]));
  buffer_.reserve(static_cast<size_t>(block_rows_ * row_elements_));
}

template <typename T>
void DatasetWriter<T>::append(const T* data, int64_t rows) {  // data: (rows, row elements)
  if (rows_written_ + buffered_rows() + rows > dims_[0])
    throw UserError(path_ + ": " + dataset_ + ": more than the " + std::to_string(dims_[0]) +
                    " rows declared");
  if (row_elements_ == 0) {  // an empty dataset ([N, 0]): nothing to store
    rows_written_ += rows;
    return;
  }
  while (rows > 0) {
    const int64_t take = std::min(rows, block_rows_ - buffered_rows());
    buffer_.insert(buffer_.end(), data, data + take * row_elements_);
    data += take * row_elements_;
    rows -= take;
    if (buffered_rows() == block_rows_) flush();
  }
}

template <typename T>
void DatasetWriter<T>::flush() {
  const int64_t rows = buffered_rows();
  if (rows == 0) return;
  Handle space(H5Dget_space(handle_.id()), H5Sclose);
  std::vector<hsize_t> start(dims_.size(), 0), count(dims_.begin(), dims_.end());
  start[0] = static_cast<hsize_t>(rows_written_);
  count[0] = static_cast<hsize_t>(rows);
  H5Sselect_hyperslab(space.id(), H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr);
  Handle memory(H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr), H5Sclose);
  if (H5Dwrite(handle_.id(), native_type<T>(), memory.id(), space.id(), H5P_DEFAULT, buffer_.data()) < 0)
    throw UserError(path_ + ": " + dataset_ + ": write failed (disk full?)");
  rows_written_ += rows;
  buffer_.clear();
}

template <typename T>
void DatasetWriter<T>::finish() {
  flush();
  if (rows_written_ != dims_[0])
    throw UserError(path_ + ": " + dataset_ + ": " + std::to_string(rows_written_) + " rows written, " +
                    std::to_string(dims_[0]) + " declared");
  handle_.reset();
}

namespace {
struct OpenDataset {
  Handle ds, type, space;
  std::vector<int64_t> dims;
};

bool has_fletcher32(hid_t dataset) {
  Handle plist(H5Dget_create_plist(dataset), H5Pclose);
  unsigned flags = 0;
  size_t values = 0;
  unsigned config = 0;
  return plist.valid() && H5Pget_filter_by_id2(plist.id(), H5Z_FILTER_FLETCHER32, &flags, &values, nullptr, 0,
                                               nullptr, &config) >= 0;
}

// The message for a failed H5Dread, from HDF5's error stack (read before any other HDF5 call clears it): a
// Fletcher-32 mismatch is reported as such, anything else as a corrupt or truncated file.
std::string read_failure(const std::string& where) {
  bool checksum = false;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_DOWNWARD,
      [](unsigned, const H5E_error2_t* error, void* found) -> herr_t {
        if (error->desc && std::strstr(error->desc, "Fletcher32")) *static_cast<bool*>(found) = true;
        return 0;
      },
      &checksum);
  return where + (checksum ? ": checksum mismatch (file is corrupt)" : ": read failed (corrupt or truncated file)");
}

// Opens a dataset for reading: present, a dataset, and, when it holds data, protected by Fletcher-32 (File's
// contract: no unverified data is ever read).
OpenDataset open_dataset(hid_t file, const std::string& path, const std::string& dataset, const File& f) {
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
  const std::string no_checksum = path + ": " + dataset +
                                  ": no checksum (written by an older Halogen or another tool; write it again "
                                  "with this version's `halogen convert`, `generate` or `partition`; from Python "
                                  "with halogen.write_graph, scripts/graph_from_arrays.py, or h5py's "
                                  "create_dataset(..., chunks=True, fletcher32=True))";
  if (rank == 0) {  // a scalar: the CRC-32 attribute File::write stores, checked here on its stored bytes
    if (!f.has_attr(kScalarChecksum, dataset)) throw UserError(no_checksum);
    Handle memory_type(H5Tget_native_type(o.type.id(), H5T_DIR_ASCEND), H5Tclose);
    std::vector<unsigned char> value(H5Tget_size(memory_type.id()));
    if (H5Dread(o.ds.id(), memory_type.id(), H5S_ALL, H5S_ALL, H5P_DEFAULT, value.data()) < 0)
      throw UserError(read_failure(path + ": " + dataset));
    if (static_cast<int64_t>(scalar_crc32(value.data(), value.size())) != f.attr_int(kScalarChecksum, dataset))
      throw UserError(path + ": " + dataset + ": checksum mismatch (file is corrupt)");
  } else if (H5Sget_simple_extent_npoints(o.space.id()) > 0 && !has_fletcher32(o.ds.id())) {
    throw UserError(no_checksum);
  }
  return o;
}

template <typename T>
OpenDataset open_checked(hid_t file, const std::string& path, const std::string& dataset, const File& f) {
  OpenDataset o = open_dataset(file, path, dataset, f);
  if (!compatible<T>(o.type.id())) {
    const bool ids = std::is_same_v<T, int64_t> && dataset.rfind("/split/", 0) == 0;
    throw UserError(path + ": " + dataset + ": expected " + type_name<T>() + (ids ? " vertex ids" : "") +
                    ", found " + describe_type(o.type.id()) + " " + dims_text(o.dims) +
                    (ids ? ": a split lists vertex ids, not a mask (numpy.flatnonzero(mask) gives them)" : ""));
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
        throw UserError(read_failure(where));
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
    throw UserError(read_failure(where));
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
  if (H5Aexists(obj.id(), name.c_str()) > 0) {
    // An attribute of the same type is rewritten in place: the object header ends as if the value had been
    // the first one written (a streaming writer sets num_edges and friends once they are known, and its file
    // is byte-identical to one written in one go). Another type: deleted and created again.
    Handle existing(H5Aopen(obj.id(), name.c_str(), H5P_DEFAULT), H5Aclose);
    Handle existing_type(existing.valid() ? H5Aget_type(existing.id()) : -1, H5Tclose);
    if (existing_type.valid() && H5Tequal(existing_type.id(), type) > 0) {
      if (H5Awrite(existing.id(), type, value) < 0) throw UserError("cannot write attribute " + name);
      return;
    }
    H5Adelete(obj.id(), name.c_str());
  }
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

bool File::has_checksum(const std::string& dataset) const {
  if (!exists(dataset)) throw UserError(path_ + ": " + dataset + ": missing");
  Handle ds(H5Dopen2(id(), dataset.c_str(), H5P_DEFAULT), H5Dclose);
  if (!ds.valid()) throw UserError(path_ + ": " + dataset + ": not a dataset");
  return has_fletcher32(ds.id()) || (shape(dataset).empty() && has_attr(kScalarChecksum, dataset));
}

int64_t File::verify_checksum(const std::string& dataset) const {
  const OpenDataset o = open_dataset(id(), path_, dataset, *this);
  const int64_t total = H5Sget_simple_extent_npoints(o.space.id());
  if (total <= 0) return 0;
  Handle memory_type(H5Tget_native_type(o.type.id(), H5T_DIR_ASCEND), H5Tclose);
  const int64_t element_bytes = static_cast<int64_t>(H5Tget_size(memory_type.id()));
  if (o.dims.empty()) return element_bytes;  // a scalar: open_dataset verified its CRC-32
  // Blocks of whole chunks along the first dimension, about 16 MiB each: every chunk is read (and so
  // verified) once, in bounded memory.
  Handle plist(H5Dget_create_plist(o.ds.id()), H5Pclose);
  std::vector<hsize_t> chunk(o.dims.size(), 1);
  H5Pget_chunk(plist.id(), static_cast<int>(chunk.size()), chunk.data());
  int64_t row_elements = 1;
  for (size_t i = 1; i < o.dims.size(); ++i) row_elements *= o.dims[i];
  const int64_t chunk_rows = std::max<int64_t>(1, static_cast<int64_t>(chunk[0]));
  const int64_t block_rows =
      chunk_rows * std::max<int64_t>(1, (int64_t{16} << 20) / std::max<int64_t>(1, chunk_rows * row_elements *
                                                                                        element_bytes));
  std::vector<unsigned char> buffer;
  std::vector<hsize_t> start(o.dims.size(), 0), count(o.dims.begin(), o.dims.end());
  for (int64_t begin = 0; begin < o.dims[0]; begin += block_rows) {
    start[0] = static_cast<hsize_t>(begin);
    count[0] = static_cast<hsize_t>(std::min(block_rows, o.dims[0] - begin));
    buffer.resize(static_cast<size_t>(static_cast<int64_t>(count[0]) * row_elements * element_bytes));
    H5Sselect_hyperslab(o.space.id(), H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr);
    Handle memory(H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr), H5Sclose);
    if (H5Dread(o.ds.id(), memory_type.id(), memory.id(), o.space.id(), H5P_DEFAULT, buffer.data()) < 0)
      throw UserError(read_failure(path_ + ": " + dataset));
  }
  return total * element_bytes;
}

#define HALOGEN_H5_INSTANTIATE(T)                                                                        \
  template void File::write<T>(const std::string&, const T*, const std::vector<int64_t>&, bool);         \
  template std::vector<T> File::read<T>(const std::string&, std::vector<int64_t>*) const;                \
  template std::vector<T> File::read_rows<T>(const std::string&, int64_t, int64_t) const;                \
  template std::vector<T> File::read_selected_rows<T>(const std::string&, const std::vector<int64_t>&) const;
HALOGEN_H5_INSTANTIATE(float)
template class DatasetWriter<float>;
template class DatasetWriter<int64_t>;
template class DatasetWriter<int32_t>;
HALOGEN_H5_INSTANTIATE(double)
HALOGEN_H5_INSTANTIATE(int64_t)
HALOGEN_H5_INSTANTIATE(int32_t)
HALOGEN_H5_INSTANTIATE(uint8_t)
#undef HALOGEN_H5_INSTANTIATE

}  // namespace halogen::h5
