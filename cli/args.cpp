#include "args.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace fa::cli {

int64_t parse_int(const std::string& option, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE)
    throw UsageError("--" + option + " expects an integer, got '" + text + "'");
  return v;
}

double parse_float(const std::string& option, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE)
    throw UsageError("--" + option + " expects a number, got '" + text + "'");
  return v;
}

std::vector<int64_t> parse_int_list(const std::string& option, const std::string& text) {
  std::vector<int64_t> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(parse_int(option, item));
  if (out.empty()) throw UsageError("--" + option + " expects a comma-separated list of integers");
  return out;
}

namespace {
std::string join(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}
std::string float_text(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}
}  // namespace

void Args::flag(const std::string& name, bool* value, const std::string& help) {
  opts_.push_back({name, Kind::Flag, value, help, *value ? "on" : "off"});
}
void Args::option(const std::string& name, int64_t* value, const std::string& help) {
  opts_.push_back({name, Kind::Int, value, help, std::to_string(*value)});
}
void Args::option(const std::string& name, double* value, const std::string& help) {
  opts_.push_back({name, Kind::Float, value, help, float_text(*value)});
}
void Args::option(const std::string& name, std::string* value, const std::string& help) {
  opts_.push_back({name, Kind::String, value, help, *value});
}
void Args::option(const std::string& name, std::vector<int64_t>* value, const std::string& help) {
  opts_.push_back({name, Kind::IntList, value, help, join(*value)});
}

Args::Opt* Args::find(const std::string& name) {
  for (Opt& o : opts_)
    if (o.name == name) return &o;
  return nullptr;
}

bool Args::given(const std::string& name) const {
  for (const Opt& o : opts_)
    if (o.name == name) return o.given;
  return false;
}

void Args::set(Opt& o, const std::string& text) {
  switch (o.kind) {
    case Kind::Flag: break;
    case Kind::Int: *static_cast<int64_t*>(o.target) = parse_int(o.name, text); break;
    case Kind::Float: *static_cast<double*>(o.target) = parse_float(o.name, text); break;
    case Kind::String: *static_cast<std::string*>(o.target) = text; break;
    case Kind::IntList: *static_cast<std::vector<int64_t>*>(o.target) = parse_int_list(o.name, text); break;
  }
  o.given = true;
}

bool Args::parse(int argc, char** argv, int first) {
  for (int i = first; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      print_help();
      return false;
    }
    if (a.rfind("--", 0) != 0)
      throw UsageError("unexpected argument '" + a + "' (options start with --; see fa " +
                       command_ + " --help)");
    std::string name = a.substr(2), value;
    bool has_value = false;
    if (const size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    Opt* o = find(name);
    if (!o && name.rfind("no-", 0) == 0) {
      Opt* f = find(name.substr(3));
      if (f && f->kind == Kind::Flag && !has_value) {
        *static_cast<bool*>(f->target) = false;
        f->given = true;
        continue;
      }
    }
    if (!o) throw UsageError("unknown option --" + name + " (see fa " + command_ + " --help)");
    if (o->kind == Kind::Flag) {
      if (has_value) throw UsageError("--" + name + " takes no value (use --no-" + name + " to turn it off)");
      *static_cast<bool*>(o->target) = true;
      o->given = true;
      continue;
    }
    if (!has_value) {
      if (i + 1 >= argc) throw UsageError("--" + name + " needs a value");
      value = argv[++i];
    }
    set(*o, value);
  }
  return true;
}

void Args::print_help() const {
  std::printf("usage: fa %s [options]\n\n%s\n\noptions:\n", command_.c_str(), summary_.c_str());
  for (const Opt& o : opts_) {
    std::string left = "--" + o.name;
    switch (o.kind) {
      case Kind::Flag: left += " | --no-" + o.name; break;
      case Kind::Int: left += " N"; break;
      case Kind::Float: left += " X"; break;
      case Kind::String: left += " S"; break;
      case Kind::IntList: left += " N,N,..."; break;
    }
    std::printf("  %-28s %s", left.c_str(), o.help.c_str());
    if (!o.default_text.empty()) std::printf(" [%s]", o.default_text.c_str());
    std::printf("\n");
  }
  std::printf("  %-28s %s\n", "--help", "this text");
}

}  // namespace fa::cli
