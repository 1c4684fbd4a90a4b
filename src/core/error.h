#pragma once
// Errors. A user error (bad file, bad flag, size that does not fit) is a halogen::UserError thrown up to main,
// which prints it as one line and exits 2. A programming error is HALOGEN_ASSERT, which aborts the job.
#include <stdexcept>
#include <string>

#include "core/format.h"

namespace halogen {

class UserError : public std::runtime_error {
 public:
  explicit UserError(const std::string& message) : std::runtime_error(message) {}
};

// Prints "[rank r/P host] file:line message" to stderr and aborts every rank of the job (never returns).
[[noreturn]] void fatal(const char* file, int line, const std::string& message);

}  // namespace halogen

namespace halogen::detail {
inline std::string assert_message() { return {}; }
template <typename... Args>
std::string assert_message(const char* format, Args... args) {
  if constexpr (sizeof...(Args) == 0) return format;
  else return strformat(format, args...);
}
}  // namespace halogen::detail

#define HALOGEN_ASSERT(cond, ...)                                                                  \
  do {                                                                                             \
    if (!(cond)) ::halogen::fatal(__FILE__, __LINE__, std::string("assertion failed: " #cond " ") + \
                                                          ::halogen::detail::assert_message(__VA_ARGS__)); \
  } while (0)

// Throws a UserError with a printf-style message.
#define HALOGEN_USER_CHECK(cond, ...)                                                  \
  do {                                                                                 \
    if (!(cond)) throw ::halogen::UserError(::halogen::strformat(__VA_ARGS__));        \
  } while (0)
