// `halogen`: the one command. Subcommands are in cmd_*.cpp; this file parses and reports errors.
// Exit codes: 0 ok, 1 runtime failure, 2 user error (bad flag, bad file), 3 not built in this version.
#include <algorithm>
#include <cstdio>
#include <exception>

#include "apps/commands.h"
#include "apps/config_file.h"
#include "core/build_info.h"
#include "core/error.h"

namespace halogen::app {
int& exit_code() {
  static int code = 0;
  return code;
}
}  // namespace halogen::app

int main(int argc, char** argv) {
  using namespace halogen::app;
  CLI::App app{"Halogen: full-batch graph neural network training on graphs too large for one GPU", "halogen"};
  app.require_subcommand(1, 1);
  app.set_help_all_flag("--help-all", "Show the help of every subcommand");
  app.set_version_flag(
      "--version", std::string("halogen ") + halogen::build_version() + " (" + halogen::build_commit() + ")");
  app.footer("Run `halogen SUBCOMMAND --help` for the options of one subcommand.");
  add_convert_command(app);
  add_generate_command(app);
  add_partition_command(app);
  add_train_command(app);
  add_predict_command(app);
  add_bench_command(app);
  add_info_command(app);
  add_config_options(app);  // after every subcommand exists: --config on each

  try {
    std::vector<std::string> args = expand_config_arguments(app, argc, argv);
    std::reverse(args.begin(), args.end());  // CLI11 takes a vector of arguments last first
    app.parse(args);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string where = "halogen";
    for (const CLI::App* sub : app.get_subcommands()) where += " " + sub->get_name();
    // A value read from --config is checked like one typed on the command line: say where it may come from.
    const std::string from_file =
        config_file_in_use().empty() ? "" : "; values may come from --config " + config_file_in_use();
    std::fprintf(stderr, "%s: error: %s (see `%s --help`%s)\n", where.c_str(), e.what(), where.c_str(),
                 from_file.c_str());
    return 2;
  } catch (const halogen::UserError& e) {
    std::fprintf(stderr, "halogen: error: %s\n", e.what());
    return 2;
  } catch (const NotBuilt& e) {
    std::fprintf(stderr, "halogen: %s\n", e.what());
    return 3;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "halogen: error: out of memory\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "halogen: error: %s\n", e.what());
    return 1;
  }
  return exit_code();
}
