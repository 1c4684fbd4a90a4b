// `halogen`: the one command. Subcommands are in cmd_*.cpp; this file parses and reports errors.
// Exit codes: 0 ok, 1 runtime failure, 2 user error (bad flag, bad file), 3 not built in this version.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <ios>
#include <string>
#include <thread>

#include "apps/commands.h"
#include "apps/config_file.h"
#include "core/build_info.h"
#include "core/error.h"
#include "core/memory.h"

namespace halogen::app {
int& exit_code() {
  static int code = 0;
  return code;
}
}  // namespace halogen::app

namespace {
// The rank a launcher (mpirun, srun) gave this process, read before MPI is initialised; 0 when not launched as
// one of several. An error every rank meets the same way (a bad flag) is printed by rank 0 only: once per job.
int launcher_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    if (const char* value = std::getenv(name); value != nullptr && *value != '\0') return std::atoi(value);
  }
  return 0;
}

// Exit status 2 for an error every rank met alike: rank 0 prints it; the others wait a moment first, since
// mpirun kills the remaining ranks as soon as one exits non-zero and rank 0's line must be out by then.
int user_error_exit(const std::string& line) {
  if (launcher_rank() == 0) {
    std::fprintf(stderr, "%s\n", line.c_str());
    std::fflush(stderr);
  } else {
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  return 2;
}
}  // namespace

int main(int argc, char** argv) {
  using namespace halogen::app;
  CLI::App app{"Halogen: full-batch graph neural network training on graphs too large for one GPU", "halogen"};
  app.require_subcommand(1, 1);
  app.set_help_all_flag("--help-all", "Show the help of every subcommand");
  app.set_version_flag(
      "--version", std::string("halogen ") + halogen::build_version() + " (" + halogen::build_commit() + ")");
  app.footer("Run `halogen SUBCOMMAND --help` for the options of one subcommand.");
  add_download_command(app);
  add_convert_command(app);
  add_generate_command(app);
  add_partition_command(app);
  add_train_command(app);
  add_predict_command(app);
  add_bench_command(app);
  add_info_command(app);
  add_plan_command(app);
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
    // The deepest subcommand parsed (bench spmm), not only the first level.
    for (std::vector<CLI::App*> subs = app.get_subcommands(); !subs.empty(); subs = subs.front()->get_subcommands())
      where += " " + subs.front()->get_name();
    // A value read from --config is checked like one typed on the command line: say where it may come from.
    const std::string from_file =
        config_file_in_use().empty() ? "" : "; values may come from --config " + config_file_in_use();
    return user_error_exit(where + ": error: " + e.what() + " (see `" + where + " --help`" + from_file + ")");
  } catch (const halogen::UserError& e) {
    return user_error_exit(std::string("halogen: error: ") + e.what());
  } catch (const NotBuilt& e) {
    std::fprintf(stderr, "halogen: %s\n", e.what());
    return 3;
  } catch (const std::filesystem::filesystem_error& e) {
    // A path the user gave (or a directory next to it) that cannot be created, renamed or removed: name it.
    std::fprintf(stderr, "halogen: error: %s%s%s: %s\n", e.path1().c_str(), e.path2().empty() ? "" : " -> ",
                 e.path2().c_str(), e.code().message().c_str());
    return 2;
  } catch (const std::ios_base::failure& e) {
    // libstdc++'s basic_filebuf reports a failed read or write this way (a directory where a file was
    // expected, a device error); the readers check paths first, so reaching here is an internal error.
    std::fprintf(stderr, "halogen: error: input/output failure (%s)\n", e.code().message().c_str());
    return 1;
  } catch (const std::bad_alloc&) {
    // Sizes the user controls are planned before allocation (core/memory.h), so this is the machine's limit:
    // one line naming the phase and the plan that fitted.
    std::fprintf(stderr, "halogen: error: %s\n", halogen::out_of_memory_message().c_str());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "halogen: error: internal error: %s\n", e.what());
    return 1;
  }
  return exit_code();
}
