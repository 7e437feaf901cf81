// The clusters: list: inheritance, templates, validation with the dotted key named.
#include <gtest/gtest.h>

#include <fstream>

#include "config/config.hpp"
#include "support/temp_dir.hpp"

using namespace baton::config;

namespace {

const env_lookup no_env = [](const std::string&) -> std::optional<std::string> { return std::nullopt; };

settings ok(const std::string& yaml, const std::string& file = "/etc/baton.yaml") {
  auto r = load_from_string(yaml, file, no_env);
  EXPECT_TRUE(r.value) << (r.error ? r.error->what() : "");
  return r.value.value_or(settings{});
}

config_error error_of(const std::string& yaml) {
  auto r = load_from_string(yaml, "/etc/baton.yaml", no_env);
  EXPECT_FALSE(r.value) << "accepted: " << yaml;
  return r.error.value_or(config_error{});
}

const char* family = R"(
provisioning: {interval_seconds: 5, daemon_url: "http://login1:36158"}
clusters:
  - name: a-base
    is_template: true
    account: chem
    wall_time: "4:00:00"
    ssh_host: login-a
    worker_images:
      default: {sif_path: /shared/worker.sif}
      openmm: {image_uri: ghcr.io/lab/openmm:1}
  - name: a-gpu
    extends: a-base
    partition: gpu
    max_pending_jobs: 3
  - name: a-long
    extends: a-gpu
    partition: long
    wall_time: "14-00:00:00"
    strategy: jit_threshold
    jit_threshold_hours: 2
    worker_images:
      openmm: {sif_path: /shared/openmm.sif}
      gromacs: {}
)";

}  // namespace

TEST(ConfigClusters, ExtendsMergesAndTemplatesAreLeftOut) {
  auto s = ok(family);
  EXPECT_EQ(s.provisioning.interval_seconds, 5);
  EXPECT_EQ(s.provisioning.daemon_url, "http://login1:36158");
  ASSERT_EQ(s.clusters.size(), 2u);
  const auto& gpu = s.clusters[0];
  EXPECT_EQ(gpu.name, "a-gpu");
  EXPECT_EQ(gpu.partition, "gpu");
  EXPECT_EQ(gpu.account, "chem");
  EXPECT_EQ(gpu.ssh_host, "login-a");
  EXPECT_EQ(gpu.max_pending_jobs, 3);
  EXPECT_EQ(gpu.worker_images.at("openmm").image_uri, "docker://ghcr.io/lab/openmm:1");
  const auto& lng = s.clusters[1];
  EXPECT_EQ(lng.partition, "long");
  EXPECT_EQ(lng.max_pending_jobs, 3);  // from a-gpu
  EXPECT_EQ(lng.wall_time, "14-00:00:00");
  EXPECT_EQ(lng.wall_time_seconds, 14 * 86400) << "what its placeholders record";
  EXPECT_EQ(gpu.wall_time_seconds, 4 * 3600);
  EXPECT_EQ(lng.strategy, "jit_threshold");
  EXPECT_EQ(lng.worker_images.size(), 3u);  // deep merge per key
  EXPECT_EQ(lng.worker_images.at("openmm").sif_path, "/shared/openmm.sif");
  EXPECT_EQ(lng.worker_images.at("openmm").image_uri, "");  // the child's source replaces the parent's
  EXPECT_EQ(lng.worker_images.at("default").sif_path, "/shared/worker.sif");
  EXPECT_TRUE(lng.worker_images.at("gromacs").sif_path.empty());
}

TEST(ConfigClusters, ErrorsNameTheEntryAndKey) {
  EXPECT_EQ(error_of("clusters: {a: 1}\n").key, "clusters");
  EXPECT_EQ(error_of("clusters:\n  - partition: p\n    worker_images: {d: {}}\n").key, "clusters[0].name");
  EXPECT_EQ(error_of("clusters:\n  - name: a\n    worker_images: {d: {}}\n").key, "clusters[0].partition");
  EXPECT_EQ(error_of("clusters:\n  - name: a\n    partition: p\n").key, "clusters[0].worker_images");
  EXPECT_EQ(error_of("clusters:\n  - {name: a, partition: p, worker_images: {d: {}}, colour: red}\n").key, "clusters[0].colour");
  EXPECT_EQ(error_of("clusters:\n  - {name: a, partition: p, worker_images: {d: {}}}\n"
                     "  - {name: a, partition: q, worker_images: {d: {}}}\n")
                .key,
            "clusters[1].name");
  EXPECT_EQ(error_of("clusters:\n  - {name: a, extends: nope, partition: p, worker_images: {d: {}}}\n").key,
            "clusters[0].extends");
  auto cycle = error_of(
      "clusters:\n  - {name: a, extends: b, partition: p, worker_images: {d: {}}}\n"
      "  - {name: b, extends: a, partition: p, worker_images: {d: {}}}\n");
  EXPECT_NE(cycle.message.find("cycle"), std::string::npos);
  EXPECT_EQ(error_of("clusters:\n  - {name: 'a:b', partition: p, worker_images: {d: {}}}\n").key, "clusters[0].name");
  EXPECT_EQ(error_of("clusters:\n  - {name: a, partition: p, strategy: eager, worker_images: {d: {}}}\n").key,
            "clusters[0].strategy");
  EXPECT_EQ(error_of("clusters:\n  - {name: a, partition: p, max_pending_jobs: 0, worker_images: {d: {}}}\n").key,
            "clusters[0].max_pending_jobs");
  EXPECT_EQ(error_of("clusters:\n  - {name: a, partition: p, worker_images: {d: {sif_path: /x, image_uri: y}}}\n").key,
            "clusters[0].worker_images.d");
  EXPECT_EQ(error_of("clusters:\n  - {name: a, partition: p, memory: 4G, memory_per_gpu: 2G, worker_images: {d: {}}}\n").key,
            "clusters[0].memory_per_gpu");
  EXPECT_EQ(error_of("provisioning: {interval_seconds: 0}\n").key, "provisioning.interval_seconds");
  auto margin = error_of(
      "clusters:\n  - {name: a, partition: p, wall_time: \"10:00\", handoff_margin_seconds: 600, "
      "worker_images: {d: {}}}\n");
  EXPECT_EQ(margin.key, "clusters[0].handoff_margin_seconds");
  EXPECT_NE(margin.message.find("not below wall_time (600 s)"), std::string::npos) << margin.message;
  EXPECT_EQ(error_of("clusters:\n  - {name: a, partition: p, wall_time: \"4 hours\", worker_images: {d: {}}}\n").key,
            "clusters[0].wall_time");
  // Not set: 600 s, or a quarter of a shorter allocation; every Slurm time format is read.
  for (const auto& [wall, margin_s] : std::vector<std::pair<std::string, int>>{{"10", 150},
                                                                               {"10:00", 150},
                                                                               {"0:10:00", 150},
                                                                               {"4:00:00", 600},
                                                                               {"1-0", 600},
                                                                               {"0-0:20", 300},
                                                                               {"0-0:20:00", 300},
                                                                               {"UNLIMITED", 600}})
    EXPECT_EQ(ok("clusters:\n  - {name: a, partition: p, wall_time: \"" + wall + "\", worker_images: {d: {}}}\n")
                  .clusters.at(0)
                  .handoff_margin_seconds,
              margin_s)
        << wall;
  EXPECT_EQ(ok("clusters:\n  - {name: a, partition: p, handoff_margin_seconds: 0, worker_images: {d: {}}}\n")
                .clusters.at(0)
                .handoff_margin_seconds,
            0);
}

TEST(ConfigClusters, DirectiveValuesCannotSmuggleOptionsOrLines) {
  for (const char* bad : {"\"gpu\\n#SBATCH --wrap=evil\"", "\"gpu --exclusive\"", "\"gpu;rm\"", "\"gpu'\"", "\"$(x)\""}) {
    auto e = error_of(std::string("clusters:\n  - {name: a, partition: ") + bad + ", worker_images: {d: {}}}\n");
    EXPECT_EQ(e.key, "clusters[0].partition") << bad;
  }
  EXPECT_EQ(error_of("clusters:\n  - {name: a, partition: p, account: \"x y\", worker_images: {d: {}}}\n").key,
            "clusters[0].account");
}

TEST(ConfigClusters, TemplateIsReadRelativeToTheConfigFileAndChecked) {
  baton::test::temp_dir dir;
  std::ofstream(dir / "job.mustache") << "#!/bin/bash\n#SBATCH --partition={{partition}}\nexec {{{worker_command_q}}}\n";
  std::ofstream(dir / "broken.mustache") << "{{#partition}} unclosed\n";
  auto s = ok("clusters:\n  - {name: a, partition: p, template: job.mustache, worker_images: {d: {}}}\n", dir / "c.yaml");
  ASSERT_EQ(s.clusters.size(), 1u);
  EXPECT_NE(s.clusters[0].template_text.find("{{partition}}"), std::string::npos);
  auto missing = load_from_string("clusters:\n  - {name: a, partition: p, template: none.mustache, worker_images: {d: {}}}\n",
                                  dir / "c.yaml", no_env);
  ASSERT_TRUE(missing.error);
  EXPECT_EQ(missing.error->key, "clusters[0].template");
  auto broken = load_from_string("clusters:\n  - {name: a, partition: p, template: broken.mustache, worker_images: {d: {}}}\n",
                                 dir / "c.yaml", no_env);
  ASSERT_TRUE(broken.error);
  EXPECT_EQ(broken.error->key, "clusters[0].template");
}

TEST(ConfigSalad, NeedsItsKeyFromTheEnvironmentAndAllThreeNames) {
  const char* yaml = "salad: {organization: o, project: p, container_group: g, max_replicas: 4}\n";
  auto missing = load_from_string(yaml, "/etc/baton.yaml", no_env);
  ASSERT_TRUE(missing.error);
  EXPECT_EQ(missing.error->key, "BATON_SALAD_API_KEY");
  auto with_key = load_from_string(yaml, "/etc/baton.yaml", [](const std::string& k) -> std::optional<std::string> {
    if (k == "BATON_SALAD_API_KEY") return std::string("k");
    return std::nullopt;
  });
  ASSERT_TRUE(with_key.value);
  EXPECT_TRUE(with_key.value->salad.enabled());
  EXPECT_EQ(with_key.value->salad.max_replicas, 4);
  EXPECT_EQ(with_key.value->salad.api_base_url, "https://api.salad.com/api/public");
  EXPECT_EQ(error_of("salad: {organization: o}\n").key, "salad");
  EXPECT_EQ(error_of("salad: {organization: o, project: p, container_group: g, api_key: x}\n").key, "salad.api_key");
  EXPECT_FALSE(ok("").salad.enabled());
}
