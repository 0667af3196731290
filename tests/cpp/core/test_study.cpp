// Study: ask/tell semantics, determinism, persistence (atomic, exact, corrupt files), thread safety.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "kubetune/core/error.hpp"
#include "kubetune/core/study.hpp"

using namespace kubetune;
namespace fs = std::filesystem;

namespace {
SearchSpace space3() {
  SearchSpace s;
  s.add_float("x", -5, 10).add_int("n", 1, 100, true).add_categorical("c", {"a", "b", "c"});
  return s;
}
std::unique_ptr<Study> random_study(std::uint64_t seed, Direction d = Direction::Minimize) {
  register_builtins();
  return std::make_unique<Study>(space3(), make_searcher({{"type", "random"}}), std::vector<Direction>{d}, seed);
}
double objective(const Trial& t) { return (t.x[0] - 1) * (t.x[0] - 1) + std::log(t.x[1]) + t.x[2]; }
// Per-process names: a file left by an earlier run would (rightly) refuse a new study's save.
std::string temp_path(const std::string& name) {
  return (fs::temp_directory_path() / (std::to_string(::getpid()) + "_" + name)).string();
}
void remove_study_file(const std::string& p) {
  fs::remove(p);
  fs::remove(p + ".lock");
}
std::string read_file(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace

TEST(Study, SameSeedSameTellsSameAsks) {
  auto a = random_study(11), b = random_study(11), c = random_study(12);
  for (int i = 0; i < 20; ++i) {
    auto ta = a->ask(2), tb = b->ask(2), tc = c->ask(2);
    ASSERT_EQ(ta.size(), 2u);
    for (int k = 0; k < 2; ++k) {
      EXPECT_EQ(ta[k].x, tb[k].x);
      a->tell(ta[k].id, objective(ta[k]));
      b->tell(tb[k].id, objective(tb[k]));
      c->tell(tc[k].id, objective(tc[k]));
    }
  }
  EXPECT_NE(a->trials()[0].x, c->trials()[0].x);
}

TEST(Study, TellSemanticsAndBadInput) {
  auto s = random_study(1);
  auto t = s->ask(3);
  EXPECT_EQ(s->tell(t[0].id, 2.0), TrialState::Complete);
  EXPECT_THROW(s->tell(t[0].id, 1.0), StateError);  // finished
  EXPECT_THROW(s->tell(99, 1.0), NotFound);
  EXPECT_THROW(s->tell(-1, 1.0), NotFound);
  EXPECT_EQ(s->tell(t[1].id, std::nan("")), TrialState::Failed);
  EXPECT_EQ(s->tell(t[2].id, INFINITY), TrialState::Failed);
  EXPECT_TRUE(s->trial(t[1].id).values.empty()) << "a failed trial keeps no value for searchers to see";
  EXPECT_EQ(s->best()->id, t[0].id);
  auto u = s->ask(1)[0];
  s->report(u.id, 1, 0.5);
  s->report(u.id, 3, 0.25);
  s->report(u.id, 2, 0.4);
  s->report(u.id, 3, 0.2);  // overwrite
  auto iv = s->trial(u.id).intermediate;
  ASSERT_EQ(iv.size(), 3u);
  EXPECT_EQ(iv[1].first, 2);
  EXPECT_EQ(iv[2].second, 0.2);
  EXPECT_THROW(s->tell_state(u.id, TrialState::Complete), InvalidArgument);
  s->tell_state(u.id, TrialState::Pruned);
  EXPECT_THROW(s->report(u.id, 4, 0.1), StateError);
  EXPECT_FALSE(s->should_prune(u.id));
  EXPECT_THROW(s->tell(u.id, 1.0), StateError);
}

TEST(Study, BestRespectsDirection) {
  auto s = random_study(3, Direction::Maximize);
  auto t = s->ask(3);
  s->tell(t[0].id, 1.0);
  s->tell(t[1].id, 5.0);
  s->tell(t[2].id, 3.0);
  EXPECT_EQ(s->best()->values[0], 5.0);
}

TEST(Study, EnqueueAndAddTrial) {
  auto s = random_study(2);
  Assignment a{{"x", 1.0}, {"n", std::int64_t{7}}, {"c", std::string("b")}};
  auto id = s->enqueue(a);
  EXPECT_EQ(s->trial(id).state, TrialState::Pending);
  EXPECT_THROW(s->tell(id, 1.0), StateError) << "enqueued but not asked";
  auto t = s->ask(2);
  EXPECT_EQ(t[0].id, id);
  EXPECT_EQ(t[0].x, (std::vector<double>{1.0, 7.0, 1.0}));
  EXPECT_EQ(t[0].state, TrialState::Running);
  auto added = s->add_trial(a, {0.5});
  EXPECT_EQ(s->trial(added).state, TrialState::Complete);
  EXPECT_THROW(s->add_trial(a, {0.5}, TrialState::Running), InvalidArgument);
  EXPECT_THROW(s->enqueue({{"x", 100.0}, {"n", std::int64_t{7}}, {"c", std::string("b")}}), InvalidArgument);
  EXPECT_THROW(s->enqueue({{"zzz", 1.0}}), InvalidArgument);
}

TEST(Study, ExhaustionOfAFiniteSpace) {
  register_builtins();
  SearchSpace sp;
  sp.add_categorical("c", {"a", "b", "c"}).add_int("k", 0, 1);
  Study s(sp, make_searcher({{"type", "random"}}), {Direction::Minimize}, 0);
  auto t = s.ask(4);
  EXPECT_EQ(t.size(), 4u);
  auto more = s.ask(5);
  EXPECT_EQ(more.size(), 2u);  // 6 points in all, none repeated
  EXPECT_TRUE(s.exhausted());
  std::set<std::vector<double>> seen;
  for (const auto& x : s.trials()) EXPECT_TRUE(seen.insert(x.x).second);
  EXPECT_TRUE(s.ask(1).empty());
}

TEST(Study, SaveLoadRoundTripsExactlyAndContinuesIdentically) {
  auto s = random_study(77);
  for (int i = 0; i < 15; ++i) {
    auto t = s->ask(1)[0];
    s->report(t.id, 1, 0.1 * i);
    if (i % 5 == 4) s->tell(t.id, std::nan(""));
    else s->tell(t.id, objective(t) / 3.0);
  }
  s->ask(2);  // two running trials are saved as running
  std::string p = temp_path("kt_study_roundtrip.json");
  s->save(p);
  auto l = Study::load(p);
  auto a = s->trials(), b = l->trials();
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i] == b[i]) << "trial " << i;
  EXPECT_EQ(s->to_json().dump(), l->to_json().dump());
  for (int i = 0; i < 5; ++i) {
    auto ta = s->ask(3), tb = l->ask(3);
    for (int k = 0; k < 3; ++k) {
      EXPECT_EQ(ta[k].x, tb[k].x);
      s->tell(ta[k].id, objective(ta[k]));
      l->tell(tb[k].id, objective(tb[k]));
    }
  }
  remove_study_file(p);
}

TEST(Study, CorruptOrTruncatedFileGivesClearErrorAndIsUntouched) {
  auto s = random_study(5);
  for (int i = 0; i < 5; ++i) {
    auto t = s->ask(1)[0];
    s->tell(t.id, objective(t));
  }
  std::string p = temp_path("kt_study_corrupt.json");
  s->save(p);
  std::string full = read_file(p);
  {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out << full.substr(0, full.size() / 2);
  }
  std::string truncated = read_file(p);
  try {
    Study::load(p);
    FAIL() << "truncated file loaded";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("truncated or corrupt"), std::string::npos) << e.what();
  }
  EXPECT_EQ(read_file(p), truncated) << "load must never modify the file";
  {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out << R"({"format": "kubetune.study", "version": 1, "space": {"parameters": []}})";
  }
  EXPECT_THROW(Study::load(p), InvalidArgument);
  EXPECT_THROW(Study::load(temp_path("kt_no_such_study.json")), IoError);
  // The file was changed behind this study's back: a plain save is refused, an explicit overwrite is atomic
  // (no temp files left behind, content complete).
  EXPECT_THROW(s->save(p), StateError);
  s->save(p, /*overwrite=*/true);
  EXPECT_EQ(Study::load(p)->to_json().dump(), s->to_json().dump());
  for (const auto& e : fs::directory_iterator(fs::temp_directory_path()))
    EXPECT_EQ(e.path().filename().string().find("kt_study_corrupt.json.tmp"), std::string::npos);
  remove_study_file(p);
  EXPECT_THROW(s->save("/nonexistent-dir/x/study.json"), IoError);
}

TEST(Study, EightThreadsAskAndTellWithoutLossOrDuplication) {
  auto s = random_study(9);
  const int per_thread = 250;
  std::atomic<int> told{0};
  std::vector<std::thread> th;
  for (int w = 0; w < 8; ++w) {
    th.emplace_back([&, w] {
      for (int i = 0; i < per_thread; ++i) {
        auto ts = s->ask(1 + (i % 2));
        for (const auto& t : ts) {
          s->report(t.id, 0, 1.0);
          if ((i + w) % 7 == 0) s->tell_state(t.id, TrialState::Failed);
          else s->tell(t.id, objective(t));
          told++;
        }
        (void)s->best();
      }
    });
  }
  for (auto& t : th) t.join();
  auto all = s->trials();
  EXPECT_EQ(static_cast<int>(all.size()), told.load());
  EXPECT_EQ(all.size(), 8u * (per_thread / 2 * 1 + per_thread / 2 * 2));
  std::set<std::int64_t> ids;
  for (std::size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(all[i].id, static_cast<std::int64_t>(i));
    EXPECT_TRUE(all[i].is_finished());
    ids.insert(all[i].id);
  }
  EXPECT_EQ(ids.size(), all.size());
}

TEST(Study, ConstructorValidation) {
  register_builtins();
  EXPECT_THROW(Study(SearchSpace{}, make_searcher({{"type", "random"}})), InvalidArgument);
  EXPECT_THROW(Study(space3(), nullptr), InvalidArgument);
  EXPECT_THROW(make_searcher({{"type", "no-such"}}), NotFound);
  EXPECT_THROW(make_searcher(nlohmann::json::array()), InvalidArgument);
}

TEST(Study, EnqueuedTrialsComeFirstInOrderAcrossAsks) {
  auto s = random_study(4);
  for (int i = 0; i < 5; ++i) s->tell(s->ask(1)[0].id, 1.0);
  auto a = s->enqueue({{"x", 1.0}, {"n", std::int64_t{2}}, {"c", std::string("a")}});
  auto b = s->enqueue({{"x", 2.0}, {"n", std::int64_t{3}}, {"c", std::string("b")}});
  auto first = s->ask(1);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].id, a);
  auto c = s->enqueue({{"x", 3.0}, {"n", std::int64_t{4}}, {"c", std::string("c")}});
  auto next = s->ask(3);
  ASSERT_EQ(next.size(), 3u);
  EXPECT_EQ(next[0].id, b);
  EXPECT_EQ(next[1].id, c);
  EXPECT_FALSE(next[2].system_attrs.count("enqueued"));
  EXPECT_EQ(next[1].x[0], 3.0);
  // A reloaded study still hands out a waiting enqueued trial first.
  auto d = s->enqueue({{"x", 4.0}, {"n", std::int64_t{5}}, {"c", std::string("a")}});
  auto l = Study::from_json(s->to_json());
  EXPECT_EQ(l->ask(1)[0].id, d);
}
