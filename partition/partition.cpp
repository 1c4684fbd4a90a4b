// Placeholder translation unit until the partitioner land.
namespace halogen::partition {}
