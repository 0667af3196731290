// Integers read from autoscaler JSON go through checked_int: out-of-range or fractional values are refused with
// the field's name (the fuzzer's findings: 1e24 and 1e30 reached undefined float-to-int conversions).
#include <gtest/gtest.h>

#include <string>

#include "kubetune/core/error.hpp"
#include "kubetune/sched/autoscale/hpa.hpp"
#include "kubetune/sched/autoscale/kpa.hpp"
#include "../error_of.hpp"

using namespace kubetune::sched::autoscale;

TEST(AutoscaleJsonInts, KpaRevisionRefusesHugeAndFractionalCounts) {
  EXPECT_NE(error_of([] { KpaRevision::from_json(R"({"min_scale": 1.14e24})"); }).find("min_scale"), std::string::npos);
  EXPECT_NE(error_of([] { KpaRevision::from_json(R"({"min_scale": 2.5})"); }).find("must be an integer"),
            std::string::npos);
  EXPECT_EQ(KpaRevision::from_json(R"({"min_scale": 3})").min_scale, 3);
}

TEST(AutoscaleJsonInts, HpaSpecRefusesHugeReplicaCountsAndPolicyValues) {
  EXPECT_NE(error_of([] { HpaSpec::from_json(R"({"minReplicas": 1e30, "maxReplicas": 10})"); }).find("minReplicas"),
            std::string::npos);
  const std::string policy = R"({"minReplicas": 1, "maxReplicas": 10, "behavior": {"scaleUp": {"policies": [
      {"type": "Pods", "value": 1e30, "periodSeconds": 60}]}}})";
  EXPECT_NE(error_of([&] { HpaSpec::from_json(policy); }).find("policy value"), std::string::npos);
  EXPECT_EQ(HpaSpec::from_json(R"({"minReplicas": 2, "maxReplicas": 7})").max_replicas, 7);
}
