// Placeholder until the kernels land: kernels::<op> will route to kernels::cpu / kernels::cuda here.
namespace halogen::kernels {}
