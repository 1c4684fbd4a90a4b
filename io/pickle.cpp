#include "io/pickle.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <unordered_map>

#include "core/error.h"
#include "io/input_file.h"

namespace halogen::io::pickle {

namespace {

// The globals the pickled objects of NumPy, SciPy and Python 2/3 name, by their canonical name.
const char* canonical_global(const std::string& module, const std::string& name) {
  const std::string full = module + "." + name;
  if (full == "numpy.core.multiarray._reconstruct" || full == "numpy._core.multiarray._reconstruct")
    return "numpy.core.multiarray._reconstruct";
  if (full == "numpy.ndarray") return "numpy.ndarray";
  if (full == "numpy.dtype") return "numpy.dtype";
  if (name == "csr_matrix" &&
      (module == "scipy.sparse.csr" || module == "scipy.sparse._csr" || module == "scipy.sparse"))
    return "scipy.sparse.csr_matrix";
  if (full == "collections.defaultdict") return "collections.defaultdict";
  if (full == "__builtin__.list" || full == "builtins.list") return "list";
  if (full == "__builtin__.bytes" || full == "builtins.bytes") return "bytes";
  if (full == "__builtin__.object" || full == "builtins.object") return "object";
  if (full == "copy_reg._reconstructor" || full == "copyreg._reconstructor") return "copyreg._reconstructor";
  if (full == "_codecs.encode") return "_codecs.encode";
  return nullptr;
}

void append_utf8(uint32_t code, std::string* out) {
  if (code < 0x80) {
    out->push_back(static_cast<char>(code));
  } else if (code < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (code >> 6)));
    out->push_back(static_cast<char>(0x80 | (code & 0x3F)));
  } else if (code < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (code >> 12)));
    out->push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (code & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (code >> 18)));
    out->push_back(static_cast<char>(0x80 | ((code >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (code & 0x3F)));
  }
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

class Unpickler {
 public:
  Unpickler(Document* doc, std::string data) : doc_(doc), data_(std::move(data)) {
    // Decoded bytes (strings, _codecs.encode results) are capped: a memo entry re-encoded a million times
    // must not become terabytes. Honest files decode to at most about their own size.
    budget_ = static_cast<int64_t>(data_.size()) * 4 + (int64_t{1} << 20);
  }

  const Value* run() {
    while (true) {
      op_pos_ = pos_;
      const unsigned char op = byte();
      switch (op) {
        case 0x80: {  // PROTO
          const unsigned char version = byte();
          if (version > 4) fail("pickle protocol " + std::to_string(version) + " is not supported (0-4)");
          break;
        }
        case 0x95:
          skip(8);
          break;     // FRAME: a length hint only
        case '.': {  // STOP
          if (stack_.size() != 1 || !marks_.empty())
            fail("malformed pickle (STOP with a stack of " + std::to_string(stack_.size()) + " values)");
          return stack_.back();
        }
        case '(':
          marks_.push_back(stack_.size());
          break;  // MARK
        case '0':
          pop();
          break;  // POP
        case '1':
          pop_mark();
          break;  // POP_MARK
        case '2':
          push(top());
          break;  // DUP
        case 'N':
          push(make(Value::Kind::kNone));
          break;
        case 0x88:
          push(boolean(true));
          break;  // NEWTRUE
        case 0x89:
          push(boolean(false));
          break;  // NEWFALSE
        case 'J':
          push(integer(static_cast<int32_t>(le(4))));
          break;  // BININT
        case 'K':
          push(integer(static_cast<int64_t>(le(1))));
          break;  // BININT1
        case 'M':
          push(integer(static_cast<int64_t>(le(2))));
          break;  // BININT2
        case 0x8a:
          push(long_integer(le(1)));
          break;  // LONG1
        case 0x8b:
          push(long_integer(le(4)));
          break;     // LONG4
        case 'I': {  // INT (text; 01/00 = True/False)
          const std::string line = text_line();
          if (line == "01" || line == "00")
            push(boolean(line == "01"));
          else
            push(integer(parse_int(line)));
          break;
        }
        case 'L': {  // LONG (text, optional L suffix)
          std::string line = text_line();
          if (!line.empty() && line.back() == 'L') line.pop_back();
          push(integer(parse_int(line)));
          break;
        }
        case 'G': {  // BINFLOAT (big-endian double)
          uint64_t bits = 0;
          for (int i = 0; i < 8; ++i) bits = (bits << 8) | byte();
          Value* v = make(Value::Kind::kFloat);
          std::memcpy(&v->real, &bits, 8);
          push(v);
          break;
        }
        case 'F': {  // FLOAT (text)
          const std::string line = text_line();
          char* end = nullptr;
          Value* v = make(Value::Kind::kFloat);
          v->real = std::strtod(line.c_str(), &end);
          if (line.empty() || *end != '\0') fail("malformed FLOAT '" + line.substr(0, 40) + "'");
          push(v);
          break;
        }
        case 'T':
          push(bytes_value(le(4)));
          break;  // BINSTRING (Python 2 str)
        case 'U':
          push(bytes_value(le(1)));
          break;  // SHORT_BINSTRING
        case 'B':
          push(bytes_value(le(4)));
          break;  // BINBYTES
        case 'C':
          push(bytes_value(le(1)));
          break;  // SHORT_BINBYTES
        case 0x8e:
          push(bytes_value(le(8)));
          break;  // BINBYTES8
        case 'X':
          push(text_value(le(4)));
          break;  // BINUNICODE
        case 0x8c:
          push(text_value(le(1)));
          break;  // SHORT_BINUNICODE
        case 0x8d:
          push(text_value(le(8)));
          break;  // BINUNICODE8
        case 'S':
          push(quoted_string(text_line()));
          break;  // STRING (repr of a Python 2 str)
        case 'V':
          push(raw_unicode(text_line()));
          break;  // UNICODE (raw-unicode-escape)
        case ')':
          push(make(Value::Kind::kTuple));
          break;  // EMPTY_TUPLE
        case 't':
          push(sequence(Value::Kind::kTuple, pop_mark()));
          break;
        case 0x85:
          push(tuple_of(1));
          break;  // TUPLE1
        case 0x86:
          push(tuple_of(2));
          break;  // TUPLE2
        case 0x87:
          push(tuple_of(3));
          break;  // TUPLE3
        case ']':
          push(make(Value::Kind::kList));
          break;  // EMPTY_LIST
        case 'l':
          push(sequence(Value::Kind::kList, pop_mark()));
          break;
        case 'a': {  // APPEND
          Value* item = pop();
          list_target()->items.push_back(item);
          break;
        }
        case 'e': {  // APPENDS
          std::vector<Value*> items = pop_mark();
          Value* list = list_target();
          list->items.insert(list->items.end(), items.begin(), items.end());
          break;
        }
        case '}':
          push(make(Value::Kind::kDict));
          break;     // EMPTY_DICT
        case 'd': {  // DICT
          std::vector<Value*> items = pop_mark();
          Value* dict = make(Value::Kind::kDict);
          set_items(dict, items);
          push(dict);
          break;
        }
        case 's': {  // SETITEM
          Value* value = pop();
          Value* key = pop();
          set_items(dict_target(), {key, value});
          break;
        }
        case 'u': {  // SETITEMS
          std::vector<Value*> items = pop_mark();
          set_items(dict_target(), items);
          break;
        }
        case 'q':
          put(le(1));
          break;  // BINPUT
        case 'r':
          put(le(4));
          break;  // LONG_BINPUT
        case 'p':
          put(static_cast<uint64_t>(parse_int(text_line())));
          break;  // PUT
        case 0x94:
          put(memo_.size());
          break;  // MEMOIZE
        case 'h':
          push(get(le(1)));
          break;  // BINGET
        case 'j':
          push(get(le(4)));
          break;  // LONG_BINGET
        case 'g':
          push(get(static_cast<uint64_t>(parse_int(text_line()))));
          break;     // GET
        case 'c': {  // GLOBAL
          const std::string module = text_line();
          const std::string name = text_line();
          push(global(module, name));
          break;
        }
        case 0x93: {  // STACK_GLOBAL
          const Value* name = pop();
          const Value* module = pop();
          if (module->kind != Value::Kind::kText || name->kind != Value::Kind::kText)
            fail("malformed STACK_GLOBAL (module and name must be strings)");
          push(global(module->text, name->text));
          break;
        }
        case 'R': {  // REDUCE
          const Value* args = pop();
          const Value* callable = pop();
          push(reduce(callable, args));
          break;
        }
        case 0x81: {  // NEWOBJ
          const Value* args = pop();
          const Value* cls = pop();
          if (cls->kind != Value::Kind::kGlobal || args->kind != Value::Kind::kTuple)
            fail("malformed NEWOBJ (a class and a tuple expected)");
          if (!cls->is_global("scipy.sparse.csr_matrix") && !cls->is_global("numpy.ndarray"))
            fail("cannot build " + cls->text + " objects");
          push(object(cls, args));
          break;
        }
        case 'b': {  // BUILD
          const Value* state = pop();
          Value* target = top();
          if (target->kind != Value::Kind::kObject || target->state)
            fail("BUILD on a " + type_name(*target) + " (only new numpy/scipy objects take a state)");
          target->state = state;
          break;
        }
        default: {
          char code[8];
          std::snprintf(code, sizeof code, "0x%02x", op);
          fail(std::string("unsupported pickle opcode ") + code +
               " (reads NumPy arrays, SciPy CSR matrices and dicts of lists, protocols 0-4)");
        }
      }
    }
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw UserError(doc_->path_ + ": byte " + std::to_string(op_pos_) + ": " + what);
  }
  [[noreturn]] void truncated() const {
    throw UserError(doc_->path_ + ": not a readable pickle (ends inside the opcode at byte " +
                    std::to_string(op_pos_) + "; truncated?)");
  }

  unsigned char byte() {
    if (pos_ >= data_.size()) truncated();
    return static_cast<unsigned char>(data_[pos_++]);
  }
  void skip(uint64_t n) {
    if (n > data_.size() - pos_) truncated();
    pos_ += n;
  }
  uint64_t le(int bytes) {
    if (static_cast<size_t>(bytes) > data_.size() - pos_) truncated();
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(data_[pos_ + i]);
    pos_ += bytes;
    return v;
  }
  std::string raw(uint64_t n) {
    if (n > data_.size() - pos_) truncated();
    charge(n);
    std::string s = data_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  std::string text_line() {
    const size_t end = data_.find('\n', pos_);
    if (end == std::string::npos) truncated();
    std::string s = data_.substr(pos_, end - pos_);
    pos_ = end + 1;
    if (!s.empty() && s.back() == '\r') s.pop_back();
    return s;
  }
  void charge(uint64_t n) {
    if (static_cast<int64_t>(n) > budget_ || n > (uint64_t{1} << 62))
      fail("decodes to more bytes than a pickle of this size can hold (malformed)");
    budget_ -= static_cast<int64_t>(n);
  }

  Value* make(Value::Kind kind) {
    doc_->values_.push_back(std::make_unique<Value>());
    doc_->values_.back()->kind = kind;
    return doc_->values_.back().get();
  }
  Value* boolean(bool b) {
    Value* v = make(Value::Kind::kBool);
    v->integer = b;
    return v;
  }
  Value* integer(int64_t i) {
    Value* v = make(Value::Kind::kInt);
    v->integer = i;
    return v;
  }
  Value* long_integer(uint64_t n) {  // LONG1/LONG4: n bytes of little-endian two's complement
    if (n > 8) {
      skip(n);
      fail("integer of " + std::to_string(n) + " bytes does not fit 64 bits");
    }
    const uint64_t bits = le(static_cast<int>(n));
    int64_t value = static_cast<int64_t>(bits);
    if (n > 0 && n < 8 && (bits >> (8 * n - 1)) & 1)
      value = static_cast<int64_t>(bits | (~uint64_t{0} << (8 * n)));
    return integer(value);
  }
  int64_t parse_int(const std::string& line) {
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(line.c_str(), &end, 10);
    if (line.empty() || *end != '\0' || errno == ERANGE)
      fail("malformed integer '" + line.substr(0, 40) + "'");
    return v;
  }
  Value* bytes_value(uint64_t n) {
    Value* v = make(Value::Kind::kBytes);
    v->text = raw(n);
    return v;
  }
  Value* text_value(uint64_t n) {
    Value* v = make(Value::Kind::kText);
    v->text = raw(n);
    return v;
  }
  Value* quoted_string(const std::string& line) {  // 'abc' or "abc" with Python 2 string escapes
    if (line.size() < 2 || (line[0] != '\'' && line[0] != '"') || line.back() != line[0])
      fail("malformed STRING (not a quoted string)");
    charge(line.size());
    Value* v = make(Value::Kind::kBytes);
    for (size_t i = 1; i + 1 < line.size(); ++i) {
      if (line[i] != '\\') {
        v->text.push_back(line[i]);
        continue;
      }
      if (++i + 1 >= line.size()) fail("malformed STRING (escape at its end)");
      const char c = line[i];
      switch (c) {
        case 'n':
          v->text.push_back('\n');
          break;
        case 't':
          v->text.push_back('\t');
          break;
        case 'r':
          v->text.push_back('\r');
          break;
        case 'a':
          v->text.push_back('\a');
          break;
        case 'b':
          v->text.push_back('\b');
          break;
        case 'f':
          v->text.push_back('\f');
          break;
        case 'v':
          v->text.push_back('\v');
          break;
        case '\\':
        case '\'':
        case '"':
          v->text.push_back(c);
          break;
        case 'x': {
          if (i + 3 >= line.size()) fail("malformed STRING (short \\x escape)");
          const int hi = hex_digit(line[i + 1]), lo = hex_digit(line[i + 2]);
          if (hi < 0 || lo < 0) fail("malformed STRING (bad \\x escape)");
          v->text.push_back(static_cast<char>(hi * 16 + lo));
          i += 2;
          break;
        }
        default: {
          if (c < '0' || c > '7') fail("malformed STRING (unknown escape)");
          int value = 0, digits = 0;
          while (digits < 3 && i + 1 < line.size() && line[i] >= '0' && line[i] <= '7') {
            value = value * 8 + (line[i] - '0');
            ++i, ++digits;
          }
          --i;
          v->text.push_back(static_cast<char>(value & 0xFF));
        }
      }
    }
    return v;
  }
  Value* raw_unicode(const std::string& line) {  // raw-unicode-escape: latin-1 bytes, \uXXXX, \UXXXXXXXX
    charge(line.size() * 4);
    Value* v = make(Value::Kind::kText);
    for (size_t i = 0; i < line.size(); ++i) {
      const size_t digits = i + 1 < line.size() && line[i] == '\\' ? (line[i + 1] == 'u'   ? 4
                                                                      : line[i + 1] == 'U' ? 8
                                                                                           : 0)
                                                                   : 0;
      if (digits == 0) {
        append_utf8(static_cast<unsigned char>(line[i]), &v->text);
        continue;
      }
      if (i + 2 + digits > line.size()) fail("malformed UNICODE (short escape)");
      uint32_t code = 0;
      for (size_t d = 0; d < digits; ++d) {
        const int h = hex_digit(line[i + 2 + d]);
        if (h < 0) fail("malformed UNICODE (bad escape)");
        code = code * 16 + static_cast<uint32_t>(h);
      }
      if (code > 0x10FFFF) fail("malformed UNICODE (code point out of range)");
      append_utf8(code, &v->text);
      i += 1 + digits;
    }
    return v;
  }

  void push(Value* v) { stack_.push_back(v); }
  Value* top() {
    if (stack_.size() <= (marks_.empty() ? 0 : marks_.back())) fail("malformed pickle (stack underflow)");
    return stack_.back();
  }
  Value* pop() {
    Value* v = top();
    stack_.pop_back();
    return v;
  }
  std::vector<Value*> pop_mark() {
    if (marks_.empty()) fail("malformed pickle (no MARK)");
    const size_t mark = marks_.back();
    marks_.pop_back();
    std::vector<Value*> items(stack_.begin() + static_cast<std::ptrdiff_t>(mark), stack_.end());
    stack_.resize(mark);
    return items;
  }
  Value* sequence(Value::Kind kind, std::vector<Value*> items) {
    Value* v = make(kind);
    v->items = std::move(items);
    return v;
  }
  Value* tuple_of(int n) {
    std::vector<Value*> items(static_cast<size_t>(n));
    for (int i = n - 1; i >= 0; --i) items[static_cast<size_t>(i)] = pop();
    return sequence(Value::Kind::kTuple, std::move(items));
  }
  Value* list_target() {
    Value* list = top();
    if (list->kind != Value::Kind::kList) fail("APPEND to a " + type_name(*list) + ", not a list");
    return list;
  }
  Value* dict_target() {
    Value* dict = top();
    if (dict->kind != Value::Kind::kDict) fail("SETITEM on a " + type_name(*dict) + ", not a dict");
    return dict;
  }
  // Python's dict semantics for the keys these files use (int, str): a key set again keeps its place.
  void set_items(Value* dict, const std::vector<Value*>& items) {
    if (items.size() % 2) fail("malformed pickle (odd number of dict items)");
    auto& index = dict_index_[dict];
    for (size_t i = 0; i < items.size(); i += 2) {
      const Value* key = items[i];
      std::string id;
      if (key->kind == Value::Kind::kInt || key->kind == Value::Kind::kBool)
        id = "i" + std::to_string(key->integer);
      else if (key->kind == Value::Kind::kText || key->kind == Value::Kind::kBytes)
        id = "s" + key->text;
      else
        fail("dict key of type " + type_name(*key) + " (only int and str keys are read)");
      const auto found = index.find(id);
      if (found != index.end()) {
        dict->items[found->second + 1] = items[i + 1];
      } else {
        index.emplace(std::move(id), dict->items.size());
        dict->items.push_back(items[i]);
        dict->items.push_back(items[i + 1]);
      }
    }
  }
  void put(uint64_t index) { memo_[index] = top(); }
  Value* get(uint64_t index) {
    const auto found = memo_.find(index);
    if (found == memo_.end()) fail("memo entry " + std::to_string(index) + " was never stored");
    return found->second;
  }
  Value* global(const std::string& module, const std::string& name) {
    const char* canonical = canonical_global(module, name);
    if (!canonical) {
      fail("global " + module.substr(0, 80) + "." + name.substr(0, 80) +
           " is not read (only NumPy arrays, SciPy CSR matrices and dicts of lists)");
    }
    Value* v = make(Value::Kind::kGlobal);
    v->text = canonical;
    return v;
  }
  Value* object(const Value* type, const Value* args) {
    Value* v = make(Value::Kind::kObject);
    v->type = type;
    v->args = args;
    return v;
  }
  Value* reduce(const Value* callable, const Value* args) {
    if (callable->kind != Value::Kind::kGlobal || args->kind != Value::Kind::kTuple)
      fail("malformed REDUCE (a global and a tuple expected)");
    const auto& a = args->items;
    if (callable->is_global("_codecs.encode")) {  // Python 3 bytes at protocol < 3
      if (a.size() != 2 || a[0]->kind != Value::Kind::kText || a[1]->kind != Value::Kind::kText ||
          (a[1]->text != "latin1" && a[1]->text != "latin-1"))
        fail("_codecs.encode: expected (str, 'latin1')");
      charge(a[0]->text.size());
      return latin1(a[0]->text);
    }
    if (callable->is_global("bytes")) {  // Python 3 b"" at protocol < 3
      if (!a.empty()) fail("bytes(...) with arguments is not read");
      return make(Value::Kind::kBytes);
    }
    if (callable->is_global("collections.defaultdict")) {
      if (a.size() > 1 || (a.size() == 1 && !a[0]->is_global("list")))
        fail("defaultdict: only defaultdict(list) is read");
      return make(Value::Kind::kDict);
    }
    if (callable->is_global("copyreg._reconstructor")) {  // protocols 0-1: a new-style object
      if (a.size() != 3 || !a[0]->is_global("scipy.sparse.csr_matrix") || !a[1]->is_global("object") ||
          a[2]->kind != Value::Kind::kNone)
        fail("copy_reg._reconstructor: only (csr_matrix, object, None) is read");
      return object(a[0], make(Value::Kind::kTuple));
    }
    if (callable->is_global("numpy.core.multiarray._reconstruct") || callable->is_global("numpy.dtype"))
      return object(callable, args);
    fail("cannot call " + callable->text);
  }
  Value* latin1(const std::string& utf8) {  // str.encode('latin1'): each code point < 256 becomes one byte
    Value* v = make(Value::Kind::kBytes);
    v->text.reserve(utf8.size());
    for (size_t i = 0; i < utf8.size();) {
      const unsigned char c = static_cast<unsigned char>(utf8[i]);
      if (c < 0x80) {
        v->text.push_back(static_cast<char>(c));
        i += 1;
      } else if ((c & 0xE0) == 0xC0 && i + 1 < utf8.size() && (utf8[i + 1] & 0xC0) == 0x80 && c <= 0xC3) {
        v->text.push_back(static_cast<char>(((c & 0x1F) << 6) | (utf8[i + 1] & 0x3F)));
        i += 2;
      } else {
        fail("_codecs.encode: string is not latin-1 (malformed bytes)");
      }
    }
    return v;
  }

  Document* doc_;
  std::string data_;
  size_t pos_ = 0, op_pos_ = 0;
  int64_t budget_ = 0;
  std::vector<Value*> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, Value*> memo_;
  std::unordered_map<const Value*, std::unordered_map<std::string, size_t>> dict_index_;
};

Document::Document(const std::string& path) : path_(path) {
  check_input_file(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(path + ": cannot open for reading");
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw UserError(path + ": read error");
  if (data.empty()) throw UserError(path + ": not a readable pickle (empty file)");
  Unpickler unpickler(this, std::move(data));
  root_ = unpickler.run();
}

Document::~Document() = default;

std::string type_name(const Value& value) {
  switch (value.kind) {
    case Value::Kind::kNone:
      return "NoneType";
    case Value::Kind::kBool:
      return "bool";
    case Value::Kind::kInt:
      return "int";
    case Value::Kind::kFloat:
      return "float";
    case Value::Kind::kBytes:
      return "bytes";
    case Value::Kind::kText:
      return "str";
    case Value::Kind::kTuple:
      return "tuple";
    case Value::Kind::kList:
      return "list";
    case Value::Kind::kDict:
      return "dict";
    case Value::Kind::kGlobal:
      return value.text;
    case Value::Kind::kObject:
      if (value.type->is_global("numpy.core.multiarray._reconstruct")) return "numpy.ndarray";
      return value.type->text;
  }
  return "?";
}

}  // namespace halogen::io::pickle
