// Per-object thread counts: a Darts engine applies its n_threads around its own calls only (no process state).
#include <gtest/gtest.h>

#include <thread>
#include <vector>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "fd.hpp"
#include "kubetune/core/error.hpp"
#include "kubetune/core/rng.hpp"
#include "kubetune/nas/darts.hpp"

using namespace kubetune::nas;

namespace {

DartsConfig small_config(int n_threads) {
  DartsConfig c;
  c.net.in_channels = 1;
  c.net.num_classes = 2;
  c.net.channels = 4;
  c.net.layers = 1;
  c.net.nodes = 1;
  c.net.multiplier = 1;
  c.net.stem_multiplier = 1;
  c.net.ops = {"none", "skip_connect", "avg_pool_3x3"};
  c.batch_size = 4;
  c.n_threads = n_threads;
  return c;
}

struct Data {
  std::vector<float> x;
  std::vector<int> y;
  int n = 16;
};

Data data() {
  Data d;
  kubetune::Rng rng(5);
  d.x.resize(static_cast<std::size_t>(d.n) * 8 * 8);
  for (auto& v : d.x) v = static_cast<float>(rng.normal());
  for (int i = 0; i < d.n; ++i) d.y.push_back(i % 2);
  return d;
}

/// The op thread count seen inside each step of a search.
std::vector<int> counts_during_search(Darts& darts, const Data& d) {
  std::vector<int> seen;
  darts.search(d.x.data(), d.y.data(), d.n, 1, 8, 8, 1, {}, [&](int, int) { seen.push_back(n_threads()); });
  return seen;
}

int omp_max() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

}  // namespace

TEST(NasThreads, EnginesKeepTheirOwnCountAndLeaveTheProcessAlone) {
  const int before = n_threads(), omp_before = omp_max();
  Darts a(small_config(1), Device::CPU);
  Darts b(small_config(3), Device::CPU);
  EXPECT_EQ(a.config().n_threads, 1);
  EXPECT_EQ(b.config().n_threads, 3);
  EXPECT_EQ(n_threads(), before) << "constructing an engine changed the caller's setting";
  EXPECT_EQ(omp_max(), omp_before);
  const Data d = data();
  for (int v : counts_during_search(b, d)) EXPECT_EQ(v, 3);
  for (int v : counts_during_search(a, d)) EXPECT_EQ(v, 1);  // b's search did not leave 3 behind
  for (int v : counts_during_search(b, d)) EXPECT_EQ(v, 3);  // nor did a's leave 1
  EXPECT_EQ(n_threads(), before);
  EXPECT_EQ(omp_max(), omp_before);
  // n_threads = 0 follows the calling thread's setting
  Darts c(small_config(0), Device::CPU);
  for (int v : counts_during_search(c, d)) EXPECT_EQ(v, before);
}

TEST(NasThreads, TwoEnginesOnTwoThreadsConcurrently) {
  const Data d = data();
  std::vector<int> seen1, seen2;
  std::thread t1([&] {
    Darts a(small_config(1), Device::CPU);
    seen1 = counts_during_search(a, d);
  });
  std::thread t2([&] {
    Darts b(small_config(2), Device::CPU);
    seen2 = counts_during_search(b, d);
  });
  t1.join();
  t2.join();
  ASSERT_FALSE(seen1.empty());
  ASSERT_FALSE(seen2.empty());
  for (int v : seen1) EXPECT_EQ(v, 1);
  for (int v : seen2) EXPECT_EQ(v, 2);
}

TEST(NasThreads, SetNThreadsIsPerCallingThread) {
  const int before = n_threads(), omp_before = omp_max();
  int other = 0;
  std::thread t([&] {
    set_n_threads(2);
    other = n_threads();
  });
  t.join();
  EXPECT_EQ(other, 2);
  EXPECT_EQ(n_threads(), before);
  EXPECT_EQ(omp_max(), omp_before);
  {
    ThreadsScope scope(5);
    EXPECT_EQ(n_threads(), 5);
    ThreadsScope keep(0);  // <= 0 keeps the current value
    EXPECT_EQ(n_threads(), 5);
  }
  EXPECT_EQ(n_threads(), before);
}

TEST(NasThreads, DeprecatedThreadsAliasAndValidation) {
  DartsConfig c = small_config(0);
  c.threads = 2;  // the old field name still works
  Darts a(c, Device::CPU);
  EXPECT_EQ(a.config().n_threads, 2);
  c.n_threads = -1;
  c.threads = 0;
  EXPECT_THROW(Darts(c, Device::CPU), kubetune::InvalidArgument);
  c.n_threads = 2;
  c.threads = 3;
  try {
    Darts bad(c, Device::CPU);
    FAIL() << "disagreeing n_threads / threads accepted";
  } catch (const kubetune::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("n_threads"), std::string::npos) << e.what();
  }
}
