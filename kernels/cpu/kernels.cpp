// Placeholder translation unit until the kernels land.
namespace halogen::kernels {}
