// Hostile inputs to the Alibaba-trace CSV readers (issue #18): short rows, non-numbers, numbers that used to be
// truncated, an empty file, a header only, a directory. Each must give an error naming file, line and column.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "kubetune/core/error.hpp"
#include "kubetune/sched/gpu/trace.hpp"

using namespace kubetune::sched::gpu;
namespace kt = kubetune;
namespace fs = std::filesystem;

namespace {
const char* kNodeHeader = "sn,cpu_milli,memory_mib,gpu,model\n";
const char* kPodHeader = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n";

class TraceFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kt_trace_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) const {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
  fs::path dir_;
};

// The message of the exception of type E that f throws ("" and a test failure if it throws none or another).
template <class E>
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
    return "";
  }
  ADD_FAILURE() << "no exception";
  return "";
}
std::string node_error(const std::string& path) {
  return error_of<kt::InvalidArgument>([&] { load_trace_cluster(path, false); });
}
std::string pod_error(const std::string& path) {
  return error_of<kt::InvalidArgument>([&] { load_trace_pods(path); });
}
}  // namespace

TEST_F(TraceFiles, WellFormedFilesLoad) {
  const std::string nodes = write("n.csv", std::string("\xEF\xBB\xBF") + kNodeHeader +
                                               "a,64000,262144,2,T4\r\n\nb,32000,131072,0,\n");
  Cluster all = load_trace_cluster(nodes, false);
  ASSERT_EQ(all.num_nodes(), 2);
  EXPECT_EQ(all.node(0).cpu_milli, 64000);
  EXPECT_EQ(all.node(0).model, "T4");
  EXPECT_EQ(all.total_cpu_milli(), 96000);
  EXPECT_EQ(load_trace_cluster(nodes).num_nodes(), 1);  // GPU nodes only
  const std::string pods = write("p.csv", std::string(kPodHeader) + "p0,1000,2048,1,500,T4|V100M16|T4\np1,500,0,0,0,");
  const auto q = load_trace_pods(pods);
  ASSERT_EQ(q.size(), 2u);
  EXPECT_EQ(q[0].gpu_milli, 500);
  EXPECT_EQ(q[0].models, (std::vector<std::string>{"T4", "V100M16"}));
  EXPECT_EQ(q[1].gpu_count, 0);
}

TEST_F(TraceFiles, ShortAndLongRowsNameTheLine) {
  // Used to index past the end of the row (segfault) for a row of one field.
  EXPECT_EQ(node_error(write("n.csv", std::string(kNodeHeader) + "a,64000,262144,2,T4\nb\n")),
            "trace file '" + (dir_ / "n.csv").string() + "' line 3 has 1 fields, the header has 5");
  EXPECT_NE(pod_error(write("p.csv", std::string(kPodHeader) + "p0,1000\n")).find("line 2 has 2 fields"),
            std::string::npos);
  EXPECT_NE(node_error(write("x.csv", std::string(kNodeHeader) + "a,1,1,0,,extra\n")).find("line 2 has 6 fields"),
            std::string::npos);
}

TEST_F(TraceFiles, NonNumbersAreRejectedWithColumn) {
  const std::string f = write("n.csv", std::string(kNodeHeader) + "a,64000,262144,2,T4\nb,lots,1,0,\n");
  EXPECT_EQ(node_error(f), "trace file '" + f + "' line 3 column 2 'cpu_milli' = 'lots' is not an integer");
  EXPECT_NE(node_error(write("a.csv", std::string(kNodeHeader) + "a,1,,0,\n")).find("column 3 'memory_mib' = ''"),
            std::string::npos);
  EXPECT_NE(node_error(write("b.csv", std::string(kNodeHeader) + "a,1, 5,0,\n")).find("' 5' is not an integer"),
            std::string::npos);
  EXPECT_NE(pod_error(write("p.csv", std::string(kPodHeader) + "p0,1000,0,1,12abc,\n")).find("'12abc' is not an"),
            std::string::npos);
}

TEST_F(TraceFiles, NumbersAreNotTruncated) {
  // 4294967297 GPUs used to become 1 and 1.7 became 1.
  EXPECT_NE(node_error(write("a.csv", std::string(kNodeHeader) + "a,1,1,4294967297,T4\n"))
                .find("line 2 column 4 'gpu' = 4294967297 is out of range [0, 64]"),
            std::string::npos);
  EXPECT_NE(node_error(write("b.csv", std::string(kNodeHeader) + "a,1.7,1,1,T4\n")).find("'1.7' is not an integer"),
            std::string::npos);
  EXPECT_NE(node_error(write("c.csv", std::string(kNodeHeader) + "a,99999999999999999999,1,1,T4\n"))
                .find("'99999999999999999999' is out of range"),
            std::string::npos);
  EXPECT_NE(node_error(write("d.csv", std::string(kNodeHeader) + "a,-5,1,1,T4\n")).find("= -5 is out of range"),
            std::string::npos);
  EXPECT_NE(pod_error(write("p.csv", std::string(kPodHeader) + "p0,1,0,4294967297,1000,\n"))
                .find("column 4 'num_gpu' = 4294967297 is out of range [0, 64]"),
            std::string::npos);
  EXPECT_NE(pod_error(write("q.csv", std::string(kPodHeader) + "p0,1,0,1,1.7,\n")).find("'gpu_milli' = '1.7'"),
            std::string::npos);
  EXPECT_NE(pod_error(write("r.csv", std::string(kPodHeader) + "p0,1,0,1,1001,\n")).find("out of range [0, 1000]"),
            std::string::npos);
}

TEST_F(TraceFiles, NodeCpuTotalMustNotOverflow) {
  const std::string big = "9000000000000000000";  // each fits int64, two do not
  const std::string f = write("n.csv", std::string(kNodeHeader) + "a," + big + ",1,1,T4\nb," + big + ",1,1,T4\n");
  EXPECT_NE(node_error(f).find("line 3 column 2 'cpu_milli': the total cpu_milli of the nodes so far overflows int64"),
            std::string::npos);
}

TEST_F(TraceFiles, ValidationErrorsCarryTheLine) {
  EXPECT_NE(node_error(write("n.csv", std::string(kNodeHeader) + "a,1,1,1,T4\na,1,1,1,T4\n"))
                .find("line 3: node 'a': duplicate name"),
            std::string::npos);
  EXPECT_NE(pod_error(write("p.csv", std::string(kPodHeader) + "p0,1,0,0,500,\n")).find("line 2: request 'p0'"),
            std::string::npos);
}

TEST_F(TraceFiles, BadFilesAndHeaders) {
  const std::string empty = write("empty.csv", "");
  EXPECT_EQ(node_error(empty), "trace file '" + empty + "' is empty (expected a header line)");
  EXPECT_NE(pod_error(write("h.csv", kPodHeader)).find("has a header but no data rows"), std::string::npos);
  EXPECT_NE(node_error(write("blank.csv", std::string(kNodeHeader) + "\n\r\n")).find("no data rows"),
            std::string::npos);
  EXPECT_NE(node_error(write("m.csv", "sn,cpu_milli,memory_mib,model\na,1,1,T4\n")).find("lacks column 'gpu'"),
            std::string::npos);
  EXPECT_NE(node_error(write("d.csv", "sn,cpu_milli,memory_mib,gpu,gpu,model\n")).find("line 1: column 'gpu' appears twice"),
            std::string::npos);
  EXPECT_NE(node_error(write("l.csv", std::string(kNodeHeader) + std::string(70000, 'x'))).find("line 2 is longer than"),
            std::string::npos);
  EXPECT_NE(error_of<kt::IoError>([&] { load_trace_pods(dir_.string()); }).find("is not a regular file"),
            std::string::npos);
  EXPECT_NE(error_of<kt::IoError>([&] { load_trace_cluster((dir_ / "absent.csv").string()); }).find("cannot open"),
            std::string::npos);
}

TEST(ClusterHardening, TotalCpuOverflowIsRefusedAndLeavesTheClusterUnchanged) {
  Cluster c;
  NodeSpec n;
  n.name = "a";
  n.cpu_milli = std::numeric_limits<std::int64_t>::max() / 2 + 1;
  c.add_node(n);
  n.name = "b";
  EXPECT_THROW(c.add_node(n), kubetune::InvalidArgument);
  EXPECT_EQ(c.num_nodes(), 1);
  EXPECT_EQ(c.find_node("b"), -1);
  EXPECT_EQ(c.total_cpu_milli(), n.cpu_milli);
}
