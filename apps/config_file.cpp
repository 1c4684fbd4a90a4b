#include "apps/config_file.h"

#include <algorithm>
#include <filesystem>
#include <memory>

#include "core/error.h"

namespace halogen::app {
namespace {

std::string& last_config_file() {
  static std::string path;
  return path;
}

// The names from the root to `command` (without the root's): {"train"}, {"bench", "spmm"}.
std::vector<std::string> command_path(const CLI::App* command) {
  std::vector<std::string> names;
  for (const CLI::App* app = command; app != nullptr && app->get_parent() != nullptr; app = app->get_parent())
    names.insert(names.begin(), app->get_name());
  return names;
}

// All subcommand names below `app`, at any depth: sections of a shared file that belong to another command.
void collect_names(CLI::App* app, std::vector<std::string>& names) {
  for (CLI::App* sub : app->get_subcommands([](CLI::App*) { return true; })) {
    names.push_back(sub->get_name());
    collect_names(sub, names);
  }
}

bool strip_prefix(std::vector<std::string>& parents, const std::vector<std::string>& prefix) {
  if (parents.size() < prefix.size() || !std::equal(prefix.begin(), prefix.end(), parents.begin()))
    return false;
  parents.erase(parents.begin(), parents.begin() + static_cast<std::ptrdiff_t>(prefix.size()));
  return true;
}

// Whether `args` (from index `from`, the subcommand's own arguments) already give `option` (--name,
// --name=..., -s, -sVALUE).
bool given_on_command_line(const std::vector<std::string>& args, size_t from, const CLI::Option* option) {
  for (size_t i = from; i < args.size(); ++i) {
    if (args[i] == "--") break;
    for (const std::string& name : option->get_lnames())
      if (args[i] == "--" + name || args[i].rfind("--" + name + "=", 0) == 0) return true;
    for (const std::string& name : option->get_snames())
      if (args[i].rfind("-" + name, 0) == 0 && args[i].rfind("--", 0) != 0) return true;
  }
  return false;
}

// The items of `file` that are for `command`, as command-line arguments (those the command line does not give
// already); UserError for a key that is not one of its options.
std::vector<std::string> config_arguments(const std::string& file, CLI::App* command,
                                          const std::vector<std::string>& other_commands,
                                          const std::vector<std::string>& args, size_t after_command) {
  const std::vector<std::string> path = command_path(command);
  const std::string where = "halogen " + CLI::detail::join(path, " ");
  std::vector<CLI::ConfigItem> items;
  try {
    items = CLI::ConfigTOML().from_file(file);
  } catch (const CLI::ParseError& e) {
    throw UserError(file + ": not a readable TOML file: " + e.what());
  }
  std::vector<std::string> out;
  for (CLI::ConfigItem item : items) {
    if (item.name == "++" || item.name == "--") continue;  // CLI11's section markers
    if (!item.parents.empty()) {
      if (strip_prefix(item.parents, path) || strip_prefix(item.parents, {path.back()})) {
        // this command's section
      } else if (item.parents.size() < path.size() &&
                 std::equal(item.parents.begin(), item.parents.end(), path.begin())) {
        item.parents.clear();  // a group's section ([generate] for generate sbm): as the top level
      } else if (std::find(other_commands.begin(), other_commands.end(), item.parents.front()) !=
                 other_commands.end()) {
        continue;  // another command's section
      } else {
        throw UserError(file + ": unknown section [" + CLI::detail::join(item.parents, ".") + "] (key \"" +
                        item.fullname() + "\"; sections name subcommands, e.g. [train])");
      }
    }
    if (!item.parents.empty())
      throw UserError(file + ": unknown key \"" + item.fullname() + "\" (`" + where +
                      "` has no nested options)");
    std::string name = item.name;
    const CLI::Option* option = command->get_option_no_throw("--" + name);
    if (option == nullptr) {
      std::replace(name.begin(), name.end(), '_', '-');
      option = command->get_option_no_throw("--" + name);
    }
    if (option == nullptr && command->get_option_no_throw(item.name) != nullptr)
      throw UserError(file + ": \"" + item.name + "\" is a positional argument of `" + where +
                      "`: give it on the command line");
    if (option == nullptr || option == command->get_help_ptr() || name == "config" || name == "help-all")
      throw UserError(file + ": unknown key \"" + item.name + "\" (not an option of `" + where + "`; see `" +
                      where + " --help`)");
    if (given_on_command_line(args, after_command, option)) continue;  // the command line wins
    if (option->get_expected_max() == 0) {  // a flag: true sets it, false leaves its default
      HALOGEN_USER_CHECK(item.inputs.size() == 1 && (item.inputs[0] == "true" || item.inputs[0] == "false"),
                         "%s: key \"%s\" is a flag: its value must be true or false", file.c_str(),
                         item.name.c_str());
      if (item.inputs[0] == "true") out.push_back("--" + name);
      continue;
    }
    if (item.inputs.size() > 1 && option->get_expected_max() == 1) {
      // A TOML array for a one-value option: the comma list the command line takes (ranks = [1, 2, 4] is
      // --ranks=1,2,4); the option's own check judges it.
      out.push_back("--" + name + "=" + CLI::detail::join(item.inputs, ","));
      continue;
    }
    for (const std::string& value : item.inputs) {
      if (value.empty()) {  // CLI11 reads "--name=" as "--name" and would take the next argument as its value
        out.push_back("--" + name);
        out.push_back("");
      } else {
        out.push_back("--" + name + "=" + value);
      }
    }
  }
  return out;
}

void add_config_recursively(CLI::App* command) {
  for (CLI::App* sub : command->get_subcommands([](CLI::App*) { return true; })) {
    // A plain option here: its file is read before parsing (expand_config_arguments), so that the file's
    // values are parsed, checked and counted exactly like typed ones.
    sub->add_option("--config")
        ->description(
            "Read options from a TOML file (`key = value` by option name, at the top level or under [" +
            CLI::detail::join(command_path(sub), ".") + "]); options on the command line override it")
        ->type_name("FILE")
        ->configurable(false);
    add_config_recursively(sub);
  }
}

}  // namespace

void add_config_options(CLI::App& root) {
  add_config_recursively(&root);
}

std::vector<std::string> expand_config_arguments(CLI::App& root, int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  // The deepest subcommand named (bench spmm) and where its own arguments start.
  CLI::App* command = &root;
  size_t after_command = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--") break;
    if (args[i].empty() || args[i][0] == '-') continue;
    for (CLI::App* sub : command->get_subcommands([](CLI::App*) { return true; })) {
      if (sub->check_name(args[i])) {
        command = sub;
        after_command = i + 1;
        break;
      }
    }
  }
  // --config may follow any of the subcommand names (generate --config F sbm): it is for the deepest one.
  size_t after_first = args.size();
  for (size_t i = 0; i < args.size() && after_first == args.size(); ++i)
    if (!args[i].empty() && args[i][0] != '-') after_first = i + 1;
  std::string file;
  for (size_t i = std::min(after_first, after_command); i < args.size(); ++i) {
    if (args[i] == "--") break;
    if (args[i] == "--config" && i + 1 < args.size())
      file = args[i + 1];
    else if (args[i].rfind("--config=", 0) == 0)
      file = args[i].substr(9);
  }
  last_config_file() = file;
  if (file.empty() || command == &root) return args;
  std::error_code error;
  const auto status = std::filesystem::status(file, error);
  HALOGEN_USER_CHECK(std::filesystem::exists(status), "%s: no such file (--config)", file.c_str());
  HALOGEN_USER_CHECK(!std::filesystem::is_directory(status),
                     "%s: is a directory (--config wants a TOML file)", file.c_str());
  std::vector<std::string> names;
  collect_names(&root, names);
  names.erase(std::remove(names.begin(), names.end(), command->get_name()), names.end());
  const std::vector<std::string> extra = config_arguments(file, command, names, args, after_command);
  args.insert(args.begin() + static_cast<std::ptrdiff_t>(after_command), extra.begin(), extra.end());
  return args;
}

const std::string& config_file_in_use() {
  return last_config_file();
}

}  // namespace halogen::app
