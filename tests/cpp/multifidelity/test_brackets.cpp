// Exact Hyperband bracket tables (hand-computed from Li et al. 2018, Algorithm 1) and the Katib/HpBandSter modes.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "kubetune/core/error.hpp"
#include "kubetune/search/multifidelity/hyperband.hpp"

using namespace kubetune;
using namespace kubetune::search;

namespace {
using Table = std::vector<std::vector<std::pair<long, double>>>;  // per bracket: (n_i, r_i)

void expect_table(const std::vector<Bracket>& got, const Table& want, long configs, double resource) {
  ASSERT_EQ(got.size(), want.size());
  long c = 0;
  double r = 0;
  for (std::size_t b = 0; b < want.size(); ++b) {
    ASSERT_EQ(got[b].rungs.size(), want[b].size()) << "bracket " << b;
    EXPECT_EQ(got[b].s, static_cast<int>(want[b].size() - 1));
    for (std::size_t i = 0; i < want[b].size(); ++i) {
      EXPECT_EQ(got[b].rungs[i].n, want[b][i].first) << "bracket " << b << " rung " << i;
      EXPECT_DOUBLE_EQ(got[b].rungs[i].resource, want[b][i].second) << "bracket " << b << " rung " << i;
    }
    c += got[b].configs();
    r += got[b].total_resource();
  }
  EXPECT_EQ(c, configs);
  EXPECT_DOUBLE_EQ(r, resource);
}
}  // namespace

TEST(Brackets, Exact81x3MatchesPaperTable) {
  // Li et al. 2018, Table 1 (R = 81, eta = 3).
  expect_table(hyperband_brackets(81, 3),
               {{{81, 1}, {27, 3}, {9, 9}, {3, 27}, {1, 81}},
                {{34, 3}, {11, 9}, {3, 27}, {1, 81}},
                {{15, 9}, {5, 27}, {1, 81}},
                {{8, 27}, {2, 81}},
                {{5, 81}}},
               143, 1902);
}

TEST(Brackets, Exact27x3) {
  expect_table(hyperband_brackets(27, 3),
               {{{27, 1}, {9, 3}, {3, 9}, {1, 27}}, {{12, 3}, {4, 9}, {1, 27}}, {{6, 9}, {2, 27}}, {{4, 27}}}, 49,
               423);
}

TEST(Brackets, Exact243x3HasSixBrackets) {
  // log(243)/log(3) = 4.999999999999999 in floating point; the exact s_max is 5.
  EXPECT_EQ(hyperband_s_max(243, 3), 5);
  expect_table(hyperband_brackets(243, 3),
               {{{243, 1}, {81, 3}, {27, 9}, {9, 27}, {3, 81}, {1, 243}},
                {{98, 3}, {32, 9}, {10, 27}, {3, 81}, {1, 243}},
                {{41, 9}, {13, 27}, {4, 81}, {1, 243}},
                {{18, 27}, {6, 81}, {2, 243}},
                {{9, 81}, {3, 243}},
                {{6, 243}}},
               415, 8457);
}

TEST(Brackets, Exact16x2) {
  expect_table(hyperband_brackets(16, 2),
               {{{16, 1}, {8, 2}, {4, 4}, {2, 8}, {1, 16}},
                {{10, 2}, {5, 4}, {2, 8}, {1, 16}},
                {{7, 4}, {3, 8}, {1, 16}},
                {{5, 8}, {2, 16}},
                {{5, 16}}},
               43, 372);
}

TEST(Brackets, Exact64x4) {
  expect_table(hyperband_brackets(64, 4),
               {{{64, 1}, {16, 4}, {4, 16}, {1, 64}}, {{22, 4}, {5, 16}, {1, 64}}, {{8, 16}, {2, 64}}, {{4, 64}}}, 98,
               1000);
}

TEST(Brackets, MinResourceScalesBudgets) {
  // R/min = 81/1 vs 162/2: same counts, budgets doubled.
  auto a = hyperband_brackets(81, 3);
  auto b = hyperband_brackets(162, 3, BracketMode::Exact, 2);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t k = 0; k < a.size(); ++k)
    for (std::size_t i = 0; i < a[k].rungs.size(); ++i) {
      EXPECT_EQ(a[k].rungs[i].n, b[k].rungs[i].n);
      EXPECT_DOUBLE_EQ(2 * a[k].rungs[i].resource, b[k].rungs[i].resource);
    }
  EXPECT_EQ(hyperband_s_max(80, 3), 3);  // 81 > 80
  EXPECT_EQ(hyperband_s_max(0.9, 3, BracketMode::Exact, 0.1), 2);  // 0.1 * 9 = 0.9 (tolerance)
}

TEST(Brackets, Katib81x3RoundsRungsUp) {
  // Katib service.py arithmetic: top_trials = ceil(ceil(n * eta^-i) / eta).
  expect_table(hyperband_brackets(81, 3, BracketMode::Katib),
               {{{81, 1}, {27, 3}, {9, 9}, {3, 27}, {1, 81}},
                {{34, 3}, {12, 9}, {4, 27}, {2, 81}},
                {{15, 9}, {5, 27}, {2, 81}},
                {{8, 27}, {3, 81}},
                {{5, 81}}},
               143, 2181);
}

TEST(Brackets, Katib243x3LosesABracket) {
  EXPECT_EQ(hyperband_s_max(243, 3, BracketMode::Katib), 4);
  auto t = hyperband_brackets(243, 3, BracketMode::Katib);
  ASSERT_EQ(t.size(), 5u);
  // s = 4: n = ceil(5 * 81 / 5) = 81 at int(243 * 3^-4) = 3, then 27@9, 9@27, 3@81, 1@243.
  expect_table({t[0]}, {{{81, 3}, {27, 9}, {9, 27}, {3, 81}, {1, 243}}}, 81, 1215);
  // s = 3: n = ceil(5 * 27 / 4) = 34 at 9; 12@27; 4@81; 2@243.
  expect_table({t[1]}, {{{34, 9}, {12, 27}, {4, 81}, {2, 243}}}, 34, 306 + 324 + 324 + 486);
}

TEST(Brackets, Katib16x2And64x4And27x3) {
  auto t = hyperband_brackets(16, 2, BracketMode::Katib);
  ASSERT_EQ(t.size(), 5u);
  // s = 2: n = ceil(5 * 4 / 3) = 7 at int(16/4) = 4; ceil(7/2) = 4 at 8; ceil(ceil(7/2)/2) = 2 at 16.
  expect_table({t[2]}, {{{7, 4}, {4, 8}, {2, 16}}}, 7, 28 + 32 + 32);
  auto u = hyperband_brackets(64, 4, BracketMode::Katib);
  ASSERT_EQ(u.size(), 4u);
  // s = 2: n = ceil(4 * 16 / 3) = 22 at 4; ceil(22/4) = 6 at 16; ceil(ceil(22/4)/4) = 2 at 64.
  expect_table({u[1]}, {{{22, 4}, {6, 16}, {2, 64}}}, 22, 88 + 96 + 128);
  auto w = hyperband_brackets(27, 3, BracketMode::Katib);
  ASSERT_EQ(w.size(), 4u);
  expect_table({w[1]}, {{{12, 3}, {4, 9}, {2, 27}}}, 12, 36 + 36 + 54);
}

TEST(Brackets, HpBandSterFloorsTheRatio) {
  // n0 = floor((s_max+1)/(s+1)) * eta^s: 81, 27, 9, 6, 5 for R = 81, eta = 3.
  auto t = hyperband_brackets(81, 3, BracketMode::HpBandSter);
  ASSERT_EQ(t.size(), 5u);
  std::vector<long> n0;
  for (const auto& b : t) n0.push_back(b.rungs[0].n);
  EXPECT_EQ(n0, (std::vector<long>{81, 27, 9, 6, 5}));
  expect_table({t[1]}, {{{27, 3}, {9, 9}, {3, 27}, {1, 81}}}, 27, 81 * 4);
  expect_table({t[3]}, {{{6, 27}, {2, 81}}}, 6, 162 + 162);
}

TEST(Brackets, BadInputNamesTheSetting) {
  EXPECT_THROW(hyperband_brackets(0, 3), InvalidArgument);
  EXPECT_THROW(hyperband_brackets(81, 1), InvalidArgument);
  EXPECT_THROW(hyperband_brackets(1, 3, BracketMode::Exact, 2), InvalidArgument);
  try {
    hyperband_brackets(81, 1);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("eta"), std::string::npos);
  }
  EXPECT_THROW(bracket_mode_from_string("optuna?"), InvalidArgument);
}
