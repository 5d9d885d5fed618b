// Meshes of different axes over the same slots: the common mesh, and specs translated onto it
// giving every slot the same tile (checked slot by slot through ShardingParam, for every pair of
// a set of meshes of 8 and of 12 slots).

#include "sharding/mesh_alignment.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sharding/sharding_param.h"
#include "tests/testing/status_matchers.h"

namespace tessera::sharding {
namespace {

using ::tessera::testing::StatusIs;
using ::testing::HasSubstr;

Mesh M(const std::string& text) { return *Mesh::Parse(text); }
PartitionSpec P(const std::string& text) { return *PartitionSpec::Parse(text); }

TEST(MeshAlignmentTest, CommonMeshIsTheCoarsestBothAlignWith) {
  EXPECT_EQ(*CommonMesh({M("mesh{x=2,y=4}"), M("mesh{z=8}")}), M("mesh{x=2,y=4}"));
  EXPECT_EQ(*CommonMesh({M("mesh{z=8}"), M("mesh{x=2,y=4}")}), M("mesh{x=2,y=4}"));
  EXPECT_EQ(*CommonMesh({M("mesh{x=2,y=2}"), M("mesh{a=4,b=1}")}), M("mesh{x=2,y=2}"));
  // Neither is fine enough for the other: a mesh of the common sizes.
  EXPECT_EQ(*CommonMesh({M("mesh{a=2,b=4}"), M("mesh{c=4,d=2}")}), M("mesh{g0=2,g1=2,g2=2}"));
  EXPECT_EQ(*CommonMesh({M("mesh{x=1}"), M("mesh{y=1,z=1}")}), M("mesh{x=1}"));
}

TEST(MeshAlignmentTest, MeshesThatDoNotLineUpAreRefused) {
  EXPECT_THAT(CommonMesh({M("mesh{x=2,y=3}"), M("mesh{a=3,b=2}")}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("split the devices along axes that do not line up")));
  EXPECT_THAT(
      CommonMesh({M("mesh{x=8}"), M("mesh{x=4}")}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("different numbers of devices")));
  EXPECT_THAT(CommonMesh({}), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no meshes")));
  EXPECT_THAT(SpecOnto(P("P(a)"), M("mesh{a=3,b=2}"), M("mesh{x=2,y=3}")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("axis 'a' of mesh{a=3,b=2} is no run of whole axes")));
  EXPECT_THAT(SpecOnto(P("P(q)"), M("mesh{z=8}"), M("mesh{x=2,y=4}")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("names axis 'q'")));
}

TEST(MeshAlignmentTest, SpecsOntoTheCommonMeshGiveEverySlotTheSameTile) {
  const std::vector<Mesh> meshes = {
      M("mesh{z=8}"),         M("mesh{x=2,y=4}"),    M("mesh{a=4,b=2}"), M("mesh{p=2,q=2,r=2}"),
      M("mesh{u=1,v=8,w=1}"), M("mesh{n=12}"),       M("mesh{s=3,t=4}"), M("mesh{s=6,t=2}"),
      M("mesh{i=3,j=2,k=2}"), M("mesh{i=2,j=3,k=2}")};
  int checked = 0;
  for (const Mesh& a : meshes) {
    for (const Mesh& b : meshes) {
      absl::StatusOr<Mesh> common = CommonMesh({a, b});
      if (a.num_devices() != b.num_devices()) {
        EXPECT_FALSE(common.ok());
        continue;
      }
      if (!common.ok()) continue;  // 12 slots as 3x4 and 6x2 do not line up, say
      for (const Mesh* mesh : {&a, &b}) {
        // Every axis alone, every pair in both orders, on dimension 0 of a rank-2 value.
        std::vector<PartitionSpec> specs = {PartitionSpec()};
        for (const Mesh::Axis& first : mesh->axes()) {
          specs.push_back(*PartitionSpec::Create({{first.name}, {}}));
          specs.push_back(*PartitionSpec::Create({{}, {first.name}}));
          for (const Mesh::Axis& second : mesh->axes()) {
            if (second.name == first.name) continue;
            specs.push_back(*PartitionSpec::Create({{first.name, second.name}, {}}));
            specs.push_back(*PartitionSpec::Create({{first.name}, {second.name}}));
          }
        }
        for (const PartitionSpec& spec : specs) {
          SCOPED_TRACE(mesh->ToString() + " " + spec.ToString() + " onto " + common->ToString());
          absl::StatusOr<PartitionSpec> onto = SpecOnto(spec, *mesh, *common);
          ASSERT_TRUE(onto.ok()) << onto.status();
          absl::StatusOr<ShardingParam> want = ToShardingParam(*mesh, spec, 2);
          absl::StatusOr<ShardingParam> got = ToShardingParam(*common, *onto, 2);
          ASSERT_TRUE(want.ok() && got.ok());
          EXPECT_EQ(want->dim_shards(), got->dim_shards());
          EXPECT_EQ(want->DeviceTileIndices(), got->DeviceTileIndices());
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 500);
}

}  // namespace
}  // namespace tessera::sharding
