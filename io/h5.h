#pragma once
// A thin RAII layer over the HDF5 C API. Every failure is a UserError naming the file and the object, e.g.
// "g.h5: /csr/indptr: expected int64 [2709], found int32 [2709]". HDF5's own error stack printing is off.
//
// Integrity: every dataset File::write creates with data is chunked and carries HDF5's Fletcher-32 checksum
// (per chunk), which HDF5 verifies on every read of a chunk, partial reads included; a mismatch is the
// UserError "FILE: DATASET: checksum mismatch (file is corrupt)". Every reader here refuses a dataset that
// holds data but no checksum ("FILE: DATASET: no checksum (...)"), so no unverified byte is ever returned.
// Empty datasets hold no data and carry none. Files are created in the HDF5 1.10 format, whose metadata
// (superblock, object headers, chunk indexes) is checksummed too.
#include <cstdint>
#include <string>
#include <vector>

namespace halogen::h5 {

// Owns one hid_t and closes it with the right H5*close.
class Handle {
 public:
  Handle() = default;
  Handle(int64_t id, int (*closer)(int64_t)) : id_(id), closer_(closer) {}
  ~Handle() { reset(); }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  Handle(Handle&& other) noexcept : id_(other.id_), closer_(other.closer_) { other.id_ = -1; }
  Handle& operator=(Handle&& other) noexcept;
  void reset();
  // Gives up ownership without closing: the caller closes the returned id.
  int64_t release() {
    const int64_t id = id_;
    id_ = -1;
    return id;
  }
  int64_t id() const { return id_; }
  bool valid() const { return id_ >= 0; }

 private:
  int64_t id_ = -1;
  int (*closer_)(int64_t) = nullptr;
};

enum class Mode { read, create /* truncate */ };

class File {
 public:
  File(const std::string& path, Mode mode);
  const std::string& path() const { return path_; }
  int64_t id() const { return handle_.id(); }
  // Flushes and closes the file. UserError naming the file when that fails (a full disk): a file written
  // through h5::File is complete only when close() returned. The destructor closes without checking.
  void close();

  bool exists(const std::string& object_path) const;  // dataset or group, e.g. "/split/train"
  // Shape of a dataset; UserError if absent.
  std::vector<int64_t> shape(const std::string& dataset) const;

  // Writers create intermediate groups. Data is written chunked (about 1 MiB per chunk, whole rows where they
  // fit) with a Fletcher-32 checksum per chunk, and deflated first when `compress` is set. A scalar (dims {})
  // cannot be chunked: it is stored plain with the CRC-32 of its bytes in its attribute "crc32", which every
  // read checks the same way.
  template <typename T>
  void write(const std::string& dataset, const T* data, const std::vector<int64_t>& dims, bool compress = false);
  template <typename T>
  void write(const std::string& dataset, const std::vector<T>& data, bool compress = false) {
    write(dataset, data.data(), {static_cast<int64_t>(data.size())}, compress);
  }

  // Readers check rank and element type: int64 datasets read only as int64 etc., except that integer
  // datasets of any width read into int64/int32 when values fit (checked), and float64 into float32.
  template <typename T>
  std::vector<T> read(const std::string& dataset, std::vector<int64_t>* dims = nullptr) const;
  // Reads rows [row_begin, row_end) of a dataset whose first dimension is rows (hyperslab).
  template <typename T>
  std::vector<T> read_rows(const std::string& dataset, int64_t row_begin, int64_t row_end) const;
  // Reads the elements at sorted, unique row indices `rows` (point selection of whole rows).
  template <typename T>
  std::vector<T> read_selected_rows(const std::string& dataset, const std::vector<int64_t>& rows) const;

  // Attributes on the root group or on an object path.
  void set_attr(const std::string& name, const std::string& value, const std::string& object = "/");
  void set_attr(const std::string& name, int64_t value, const std::string& object = "/");
  void set_attr(const std::string& name, double value, const std::string& object = "/");
  bool has_attr(const std::string& name, const std::string& object = "/") const;
  std::string attr_string(const std::string& name, const std::string& object = "/") const;
  int64_t attr_int(const std::string& name, const std::string& object = "/") const;
  double attr_double(const std::string& name, const std::string& object = "/") const;

  // Names of the members of a group, sorted.
  std::vector<std::string> list(const std::string& group) const;

  // Inspection (for `halogen info` and type-dependent readers).
  bool is_group(const std::string& object_path) const;
  // "int64", "float32", ... of a dataset; UserError if absent.
  std::string element_type(const std::string& dataset) const;
  bool is_floating(const std::string& dataset) const;
  // Bytes the dataset occupies in the file (after compression).
  int64_t storage_bytes(const std::string& dataset) const;
  // Whether the dataset carries the Fletcher-32 filter (a scalar: its "crc32" attribute).
  bool has_checksum(const std::string& dataset) const;
  // Reads every chunk of the dataset once (in blocks of about 16 MiB, whatever its type), so HDF5 verifies
  // each chunk's checksum; returns the bytes verified. UserError on a mismatch or a missing checksum.
  int64_t verify_checksum(const std::string& dataset) const;

 private:
  std::string path_;
  Handle handle_;
};

// Writes one dataset in blocks of rows, in bounded memory: created with its full shape and the chunk shape,
// Fletcher-32 checksum and deflate option of File::write, so the file holds exactly what File::write of the
// whole array would have written. append() copies rows into a buffer of one chunk's rows and writes whole
// chunks; finish() writes the rest and checks that every declared row was given (UserError otherwise, as for
// more rows than declared). Memory: one chunk (about 1 MiB; buffer_bytes()). Not for scalars.
template <typename T>
class DatasetWriter {
 public:
  DatasetWriter(File& file, const std::string& dataset, const std::vector<int64_t>& dims,
                bool compress = false);
  DatasetWriter(const DatasetWriter&) = delete;
  DatasetWriter& operator=(const DatasetWriter&) = delete;
  void append(const T* data, int64_t rows);  // data: (rows, product of dims[1:]) in C order
  void finish();
  int64_t buffer_bytes() const { return static_cast<int64_t>(buffer_.capacity() * sizeof(T)); }
  int64_t rows_written() const { return rows_written_; }

 private:
  int64_t buffered_rows() const {
    return row_elements_ == 0 ? 0 : static_cast<int64_t>(buffer_.size()) / row_elements_;
  }
  void flush();
  std::string path_, dataset_;
  std::vector<int64_t> dims_;
  Handle handle_;
  int64_t row_elements_ = 1, block_rows_ = 1, rows_written_ = 0;
  std::vector<T> buffer_;
};

// Silences HDF5's automatic error printing (called once by File's constructor).
void quiet_hdf5_errors();

}  // namespace halogen::h5
