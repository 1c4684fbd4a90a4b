// Placeholder translation unit until the trainer land.
namespace halogen::train {}
