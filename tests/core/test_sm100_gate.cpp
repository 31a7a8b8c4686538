// The opt-in gate of the compile-only sm100a kernels (src/cuda/sm100/gate.hpp): dispatch.cu skips
// table entries with min_sm >= 100 unless FA_SM100_UNVERIFIED is exactly "1". Host logic only;
// no GPU (and no Blackwell) needed.
#include <gtest/gtest.h>

#include <string>

#include "cuda/sm100/gate.hpp"

namespace {

using fa::cuda::sm100::entry_allowed;

TEST(Sm100Gate, OlderArchesAreNeverGated) {
  for (const char* env : {static_cast<const char*>(nullptr), "", "0", "1"}) {
    EXPECT_TRUE(entry_allowed(80, env));
    EXPECT_TRUE(entry_allowed(90, env));
  }
}

TEST(Sm100Gate, Sm100NeedsExactlyOne) {
  EXPECT_FALSE(entry_allowed(100, nullptr));  // unset: the default refuses
  for (const char* env : {"", "0", "true", "yes", " 1", "1 ", "10", "01"})
    EXPECT_FALSE(entry_allowed(100, env)) << "FA_SM100_UNVERIFIED='" << env << "'";
  EXPECT_TRUE(entry_allowed(100, "1"));
  EXPECT_FALSE(entry_allowed(120, nullptr));  // anything newer is gated the same way
  EXPECT_TRUE(entry_allowed(120, "1"));
}

TEST(Sm100Gate, RefusalSaysWhyAndHow) {
  const std::string msg = fa::cuda::sm100::kRefusal;
  EXPECT_NE(msg.find("compile-only"), std::string::npos);
  EXPECT_NE(msg.find("never run on hardware"), std::string::npos);
  EXPECT_NE(msg.find("FA_SM100_UNVERIFIED=1"), std::string::npos);
}

}  // namespace
