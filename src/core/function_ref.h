#pragma once
// FunctionRef<R(Args...)>: a non-owning reference to a callable (a lambda, a function object), for callbacks that
// run inside the call they are passed to (work overlapped with an exchange). Unlike std::function it never
// allocates; the callable must outlive the FunctionRef (a lambda passed as an argument lives until the call
// returns). An empty FunctionRef is false and must not be called.
#include <type_traits>
#include <utility>

namespace halogen {

template <typename Signature>
class FunctionRef;

template <typename R, typename... Args>
class FunctionRef<R(Args...)> {
 public:
  FunctionRef() = default;
  template <typename F, typename = std::enable_if_t<!std::is_same<std::decay_t<F>, FunctionRef>::value>>
  FunctionRef(F&& f)  // NOLINT(google-explicit-constructor): passed in place of a callable
      : object_(const_cast<void*>(static_cast<const void*>(&f))),
        call_([](void* object, Args... args) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(object))(std::forward<Args>(args)...);
        }) {}

  explicit operator bool() const { return call_ != nullptr; }
  R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  void* object_ = nullptr;
  R (*call_)(void*, Args...) = nullptr;
};

}  // namespace halogen
