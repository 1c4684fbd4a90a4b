// Placeholder translation unit until the layers land.
namespace halogen::nn {}
