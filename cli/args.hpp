// A small command-line parser for the `fa` tool: each subcommand declares its options (bound to
// variables that already hold the defaults), then parses. Bad input throws UsageError, which main
// turns into one line on stderr and exit code 2.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace fa::cli {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Args {
 public:
  Args(std::string command, std::string summary) : command_(std::move(command)), summary_(std::move(summary)) {}

  // --name (true) and --no-name (false).
  void flag(const std::string& name, bool* value, const std::string& help);
  void option(const std::string& name, int64_t* value, const std::string& help);
  void option(const std::string& name, double* value, const std::string& help);
  void option(const std::string& name, std::string* value, const std::string& help);
  // Comma-separated integers: --seqlens 512,1024,2048.
  void option(const std::string& name, std::vector<int64_t>* value, const std::string& help);

  // Parses argv[first..argc). Returns false when --help was given (help already printed).
  bool parse(int argc, char** argv, int first);
  // True when the user gave the option explicitly (so a backend-dependent default may not apply).
  bool given(const std::string& name) const;
  void print_help() const;
  const std::string& command() const { return command_; }

 private:
  enum class Kind { Flag, Int, Float, String, IntList };
  struct Opt {
    std::string name;
    Kind kind;
    void* target;
    std::string help;
    std::string default_text;
    bool given = false;
  };
  Opt* find(const std::string& name);
  void set(Opt& o, const std::string& text);

  std::string command_;
  std::string summary_;
  std::vector<Opt> opts_;
};

// Parsing helpers shared by the subcommands; they throw UsageError naming the option.
int64_t parse_int(const std::string& option, const std::string& text);
double parse_float(const std::string& option, const std::string& text);
std::vector<int64_t> parse_int_list(const std::string& option, const std::string& text);

}  // namespace fa::cli
