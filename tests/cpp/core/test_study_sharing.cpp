// Study::save never loses data silently: lock + revision check, safe temp files, old files still load.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "kubetune/core/error.hpp"
#include "kubetune/core/study.hpp"

using namespace kubetune;
namespace fs = std::filesystem;

namespace {
SearchSpace space2() {
  SearchSpace s;
  s.add_float("x", -5, 10).add_categorical("c", {"a", "b", "c"});
  return s;
}
std::unique_ptr<Study> study(std::uint64_t seed) {
  register_builtins();
  return std::make_unique<Study>(space2(), make_searcher({{"type", "random"}}),
                                 std::vector<Direction>{Direction::Minimize}, seed);
}
double objective(const Trial& t) { return (t.x[0] - 1) * (t.x[0] - 1) + t.x[1]; }
void run(Study& s, int n) {
  for (int i = 0; i < n; ++i) {
    auto t = s.ask(1).at(0);
    s.tell(t.id, objective(t));
  }
}
std::string read_file(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
void write_file(const std::string& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
}
nlohmann::json read_json(const std::string& p) { return nlohmann::json::parse(read_file(p)); }

/// A fresh folder per test (gtest runs each test in its own process, possibly in parallel).
class StudySharing : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("kt_sharing_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::vector<std::string> listing() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
  fs::path dir_;
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const StateError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_F(StudySharing, RevisionCountsUpAndAStaleSaveIsRefused) {
  const std::string p = path("study.json");
  auto s = study(1);
  run(*s, 4);
  s->save(p);
  auto doc1 = read_json(p);
  EXPECT_EQ(doc1["revision"].get<std::uint64_t>(), 1u);
  const std::string lineage = doc1["lineage"].get<std::string>();
  EXPECT_EQ(lineage.size(), 32u);
  auto a = Study::load(p), b = Study::load(p);
  run(*a, 2);
  run(*b, 3);
  a->save(p);
  EXPECT_EQ(read_json(p)["revision"].get<std::uint64_t>(), 2u);
  EXPECT_EQ(read_json(p)["lineage"].get<std::string>(), lineage);
  const std::string after_a = read_file(p);
  std::string msg = error_of([&] { b->save(p); });
  EXPECT_NE(msg.find("'" + p + "'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("changed by someone else since this Study loaded or last saved it"), std::string::npos) << msg;
  EXPECT_NE(msg.find("this Study has revision 1 of lineage " + lineage.substr(0, 8)), std::string::npos) << msg;
  EXPECT_NE(msg.find("the file now has revision 2"), std::string::npos) << msg;
  EXPECT_EQ(read_file(p), after_a) << "a refused save must not touch the file";
  auto c = Study::load(p);
  EXPECT_EQ(c->to_json().dump(), a->to_json().dump());
  EXPECT_EQ(c->n_trials(), 6u);
  a->save(p);  // the object that saved last may go on saving
  EXPECT_EQ(read_json(p)["revision"].get<std::uint64_t>(), 3u);
  EXPECT_THROW(c->save(p), StateError);  // c loaded revision 2
  EXPECT_THROW(s->save(p), StateError);  // s wrote revision 1
}

TEST_F(StudySharing, AFileThisObjectNeverLoadedNeedsOverwrite) {
  const std::string p = path("study.json");
  auto s = study(2);
  run(*s, 3);
  s->save(p);
  const std::string before = read_file(p);
  auto fresh = study(3);
  std::string msg = error_of([&] { fresh->save(p); });
  EXPECT_NE(msg.find("already holds a study (revision 1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("did not load or save"), std::string::npos) << msg;
  auto copy = Study::from_json(s->to_json());
  EXPECT_THROW(copy->save(p), StateError);
  EXPECT_EQ(read_file(p), before);
  fresh->save(p, /*overwrite=*/true);
  auto doc = read_json(p);
  EXPECT_EQ(doc["revision"].get<std::uint64_t>(), 2u) << "revisions keep counting up over an overwrite";
  EXPECT_NE(doc["lineage"], nlohmann::json::parse(before)["lineage"]) << "an overwrite starts a new lineage";
  EXPECT_EQ(Study::load(p)->n_trials(), 0u);
  EXPECT_THROW(s->save(p), StateError);
  // Not a study at all: refused too (the message says so), replaced only on request.
  const std::string q = path("notes.txt");
  write_file(q, "hello");
  msg = error_of([&] { s->save(q); });
  EXPECT_NE(msg.find("is not a kubetune study"), std::string::npos) << msg;
  EXPECT_EQ(read_file(q), "hello");
  // Each path is remembered separately: a backup elsewhere does not disturb the check here.
  auto l = Study::load(p);
  l->save(path("backup.json"));
  l->save(p);
  l->save(path("backup.json"));
  EXPECT_EQ(read_json(path("backup.json"))["revision"].get<std::uint64_t>(), 2u);
}

TEST_F(StudySharing, AFileFromBeforeRevisionsLoadsAndContinuesBitForBit) {
  const std::string p = path("old.json");
  auto s = study(4);
  run(*s, 9);
  s->ask(2);  // running trials too
  write_file(p, s->to_json().dump());  // exactly the bytes save() wrote before lineage/revision existed
  auto l = Study::load(p);
  EXPECT_EQ(l->to_json().dump(), s->to_json().dump());
  l->save(p);  // unchanged since load: allowed; the file gets a lineage from now on
  EXPECT_EQ(read_json(p)["revision"].get<std::uint64_t>(), 1u);
  auto again = Study::load(p);
  EXPECT_EQ(again->to_json().dump(), s->to_json().dump());
  for (int i = 0; i < 5; ++i) {
    auto ta = s->ask(2), tb = l->ask(2), tc = again->ask(2);
    for (int k = 0; k < 2; ++k) {
      ASSERT_EQ(ta[k].x, tb[k].x);
      ASSERT_EQ(ta[k].x, tc[k].x);
      s->tell(ta[k].id, objective(ta[k]));
      l->tell(tb[k].id, objective(tb[k]));
      again->tell(tc[k].id, objective(tc[k]));
    }
  }
  // A legacy file edited after it was loaded is refused like any other change.
  auto old = Study::load(p);
  write_file(p, s->to_json().dump());
  std::string msg = error_of([&] { old->save(p); });
  EXPECT_NE(msg.find("the file now has no revision"), std::string::npos) << msg;
  // Bad lineage fields are a clear error on load.
  auto doc = s->to_json();
  doc["lineage"] = "abc";
  doc["revision"] = -3;
  write_file(p, doc.dump());
  try {
    Study::load(p);
    FAIL() << "negative revision loaded";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("'revision' must be a non-negative integer"), std::string::npos)
        << e.what();
  }
}

TEST_F(StudySharing, AnotherProcessSavedInBetweenAndTheLockIsHeld) {
  const std::string p = path("study.json");
  auto s = study(5);
  run(*s, 3);
  s->save(p);
  auto mine = Study::load(p);
  run(*mine, 1);
  // Hold the advisory lock: the child's save must wait for it.
  int lfd = ::open((p + ".lock").c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(lfd, 0);
  ASSERT_EQ(::flock(lfd, LOCK_EX), 0);
  int pipefd[2];
  ASSERT_EQ(::pipe(pipefd), 0);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(pipefd[0]);
    int code = 0;
    try {
      auto other = Study::load(p);
      run(*other, 2);
      char c = 'l';
      if (::write(pipefd[1], &c, 1) != 1) code = 3;
      other->save(p);
    } catch (...) {
      code = 2;
    }
    ::_exit(code);
  }
  ::close(pipefd[1]);
  char c = 0;
  ASSERT_EQ(::read(pipefd[0], &c, 1), 1);  // the child has loaded and is about to save
  ::close(pipefd[0]);
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  int status = 0;
  EXPECT_EQ(::waitpid(pid, &status, WNOHANG), 0) << "the child saved while the lock was held";
  EXPECT_EQ(read_json(p)["revision"].get<std::uint64_t>(), 1u);
  ::flock(lfd, LOCK_UN);
  ::close(lfd);
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(read_json(p)["revision"].get<std::uint64_t>(), 2u);
  EXPECT_EQ(Study::load(p)->n_trials(), 5u);
  std::string msg = error_of([&] { mine->save(p); });
  EXPECT_NE(msg.find("changed by someone else"), std::string::npos) << msg;
  EXPECT_EQ(Study::load(p)->n_trials(), 5u) << "the other process's trials are intact";
}

TEST_F(StudySharing, TwoObjectsInThreadsReloadingOnConflictLoseNothing) {
  const std::string p = path("study.json");
  auto s = study(6);
  s->save(p);
  std::atomic<int> conflicts{0};
  auto worker = [&](int n) {
    for (int i = 0; i < n; ++i) {
      for (int attempt = 0; attempt < 1000; ++attempt) {
        auto st = Study::load(p);
        run(*st, 1);
        try {
          st->save(p);
          break;
        } catch (const StateError&) {
          ++conflicts;
        }
      }
    }
  };
  std::thread a(worker, 25), b(worker, 25);
  a.join();
  b.join();
  auto final_study = Study::load(p);
  EXPECT_EQ(final_study->n_trials(), 50u);
  EXPECT_EQ(read_json(p)["revision"].get<std::uint64_t>(), 51u);
  auto ts = final_study->trials();
  for (std::size_t i = 0; i < ts.size(); ++i) EXPECT_EQ(ts[i].id, static_cast<std::int64_t>(i));
}

TEST_F(StudySharing, APlantedSymlinkAtTheOldTempNameIsNotFollowed) {
  const std::string p = path("study.json");
  const std::string victim = path("victim.txt");
  write_file(victim, "precious");
  // The name the previous save() used for its temp file, opened with O_CREAT|O_TRUNC (following symlinks).
  const std::string old_tmp = p + ".tmp." + std::to_string(::getpid()) + "." +
                              std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()) % 100000);
  fs::create_symlink(victim, old_tmp);
  fs::create_symlink(victim, p + ".tmp");
  auto s = study(7);
  run(*s, 3);
  s->save(p);
  run(*s, 1);
  s->save(p);
  EXPECT_EQ(read_file(victim), "precious");
  EXPECT_TRUE(fs::is_symlink(old_tmp));
  EXPECT_FALSE(fs::is_symlink(p));
  EXPECT_EQ(Study::load(p)->n_trials(), 4u);
  std::vector<std::string> expect = {"study.json", "study.json.lock", fs::path(old_tmp).filename().string(),
                                     "study.json.tmp", "victim.txt"};
  std::sort(expect.begin(), expect.end());
  EXPECT_EQ(listing(), expect);
  // A symlink at the lock's name is refused as well.
  const std::string q = path("other.json");
  fs::create_symlink(victim, q + ".lock");
  EXPECT_THROW(s->save(q), IoError);
  EXPECT_EQ(read_file(victim), "precious");
  EXPECT_FALSE(fs::exists(q));
}

TEST_F(StudySharing, AFailedWriteRemovesTheTempFileAndLeaksNoDescriptor) {
  const std::string p = path("study.json");
  auto s = study(8);
  run(*s, 2);
  s->save(p);
  const std::string before = read_file(p);
  run(*s, 200);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // In the child only: files may not grow past 4 KiB, so the temp file's write fails (EFBIG).
    ::signal(SIGXFSZ, SIG_IGN);
    rlimit lim{};
    ::getrlimit(RLIMIT_FSIZE, &lim);
    rlimit small = lim;
    small.rlim_cur = 4096;
    auto fds = [] { return std::distance(fs::directory_iterator("/proc/self/fd"), fs::directory_iterator()); };
    auto n_fds = fds();
    ::setrlimit(RLIMIT_FSIZE, &small);
    int code = 10;
    try {
      s->save(p);
    } catch (const IoError& e) {
      code = std::string(e.what()).find("write failed") != std::string::npos ? 0 : 11;
    } catch (...) {
      code = 12;
    }
    ::setrlimit(RLIMIT_FSIZE, &lim);
    if (code == 0 && fds() != n_fds) code = 13;
    if (code == 0 && read_file(p) != before) code = 14;
    if (code == 0 && listing() != std::vector<std::string>{"study.json", "study.json.lock"}) code = 15;
    if (code == 0) {
      try {
        s->save(p);  // nothing changed by the failed save: the same object may save now
        if (Study::load(p)->n_trials() != 202u) code = 16;
      } catch (...) {
        code = 17;
      }
    }
    ::_exit(code);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10 saved, 11 other message, 12 other error, 13 fd leak, 14 file changed, "
                                       "15 temp file left, 16/17 later save";
}
