# GLM-4.7-Flash-AWQ, imported by `sparkform recipe import` from glm-4.7-flash-awq.yaml.
#
# Recipe: GLM-4.7-Flash-AWQ-4bit
# cyankiwi's AWQ quantized GLM-4.7-Flash model
# Requires a patch for inference speed optimization
#
# NOTE: vLLM implementation is suboptimal even with the patch.
# The model performance is still significantly slower than it should be
# for a model with this number of active parameters. Running in cluster
# increases prompt processing performance, but not token generation.
# Expect ~40 t/s generation speed in both single node and cluster.
#
# vLLM serving cyankiwi/GLM-4.7-Flash-AWQ-4bit with speed optimization patch
# sparkrun recipe (format v1): 1 DGX Spark node(s), one GPU each, tensor parallel 1 x pipeline parallel 1, vLLM backend "mp"; the command's {placeholders} are filled from its defaults.

# The recipe's defaults, as rendered into the command (re-import with -set KEY=VALUE to change one):
#   port: 8000
#   host: 0.0.0.0
#   tensor_parallel: 1
#   gpu_memory_utilization: 0.7
#   max_model_len: 202752
#   max_num_batched_tokens: 4096
#   max_num_seqs: 64
#   served_model_name: glm-4.7-flash
locals {
  entrypoint = [
    "vllm",
    "serve",
  ]
  args = [
    "cyankiwi/GLM-4.7-Flash-AWQ-4bit",
    "--tool-call-parser",
    "glm47",
    "--reasoning-parser",
    "glm45",
    "--enable-auto-tool-choice",
    "--served-model-name",
    "glm-4.7-flash",
    "--max-model-len",
    "202752",
    "--max-num-batched-tokens",
    "4096",
    "--max-num-seqs",
    "64",
    "--gpu-memory-utilization",
    "0.7",
    "--host",
    "0.0.0.0",
  ]
  env = {
    HF_HUB_CACHE   = "/hub" # added by recipe import: the copied hub folder, mounted at /hub
    HF_HUB_OFFLINE = "1"    # added by recipe import: the copied hub folder, mounted at /hub
  }
}

node "spark" {
  for_each      = var.nodes
  host          = each.value.host
  port          = each.value.port
  user          = var.user
  identity_file = var.identity_file
  known_hosts   = var.known_hosts
  become        = true
}

# The recipe's mods (mods/fix-glm-4.7-flash-AWQ), inlined from its repository: each node builds sparkform-mods/glm-4.7-flash-awq:c20bcff57b621645
# from the recipe's image with every mod run once, as sparkrun runs them in the container. The tag
# is a hash of the base and the files: a changed mod is a new image; check sees a removed one.
resource "node_command" "mods" {
  for_each      = var.nodes
  node          = node.spark[each.key]
  become        = true
  timeout       = "30m"
  create_script = <<EOT
set -eu
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
mkdir -p "$(dirname "$ctx"'/mods/fix-glm-4.7-flash-AWQ/run.sh')"
cat > "$ctx"'/mods/fix-glm-4.7-flash-AWQ/run.sh' <<'SPARKFORM_MOD_EOF'
#!/usr/bin/env bash
set -e
echo "--- Applying GLM 4.7 AWQ speed patch..."
patch -p1 -d / < glm47_flash.patch
echo "=== OK"
echo "--- Applying vLLM crash patch (34695)..."
# Check if PR 34695 is already applied by looking for the changed file
if [ -f /usr/local/lib/python3.12/dist-packages/vllm/model_executor/layers/attention/mla_attention.py ]; then
    # Check if the specific line from PR 34695 is already present
    if grep -q "and hasattr(self.kv_b_proj, \"weight\")" /usr/local/lib/python3.12/dist-packages/vllm/model_executor/layers/attention/mla_attention.py 2>/dev/null; then
        echo "=== PR 34695 is already applied, skipping"
    else
        curl -L https://patch-diff.githubusercontent.com/raw/vllm-project/vllm/pull/34695.diff | patch -p1 -d /usr/local/lib/python3.12/dist-packages || echo "=== Warning: Failed to apply PR 34695, continuing..."
    fi
else
    curl -L https://patch-diff.githubusercontent.com/raw/vllm-project/vllm/pull/34695.diff | patch -p1 -d /usr/local/lib/python3.12/dist-packages || echo "=== Warning: Failed to apply PR 34695, continuing..."
fi
echo "=== OK"
SPARKFORM_MOD_EOF
chmod 755 "$ctx"'/mods/fix-glm-4.7-flash-AWQ/run.sh'
cat > "$ctx/Dockerfile" <<'SPARKFORM_MOD_EOF'
FROM vllm-thor-tf5
COPY mods /workspace/mods
RUN export WORKSPACE_DIR=$PWD && cd /workspace/mods/fix-glm-4.7-flash-AWQ && chmod +x run.sh && ./run.sh
LABEL org.sparkform.mods="fix-glm-4.7-flash-AWQ"
SPARKFORM_MOD_EOF
docker build -t 'sparkform-mods/glm-4.7-flash-awq:c20bcff57b621645' "$ctx"
EOT
  check = [
    "docker",
    "image",
    "inspect",
    "--format",
    "{{.Id}}",
    "sparkform-mods/glm-4.7-flash-awq:c20bcff57b621645",
  ]
  destroy_script = "docker image inspect 'sparkform-mods/glm-4.7-flash-awq:c20bcff57b621645' >/dev/null 2>&1 || exit 0\ndocker image rm 'sparkform-mods/glm-4.7-flash-awq:c20bcff57b621645'"
}

module "recipe" {
  source = "./modules/spark-recipe"

  recipe = {
    required_nodes         = 1
    tensor_parallel_size   = 1
    pipeline_parallel_size = 1
    gpus_per_node          = 1
    distributed_backend    = "mp"
    nodes = { for k, n in var.nodes : k => {
      node            = node.spark[k]
      rank            = n.rank
      home            = n.home
      serve_port      = n.serve_port
      cluster_address = n.cluster_address
    } }
  }

  # Copied into var.hub_dir on every node, mounted at /hub (HF_HUB_CACHE) and bound file by file at the target.
  hub_dir = var.hub_dir
  # model: from the model key.
  model = { repo_id = "cyankiwi/GLM-4.7-Flash-AWQ-4bit", revision = "main", target = "/model" }
  # Rank 0 from the hub (or var.model_source), the other ranks from rank 0 over the cluster link.
  model_source = var.model_source

  name = "glm-4.7-flash-awq"
  # vllm-thor-tf5 with the recipe's mods (node_command.mods).
  image      = "sparkform-mods/glm-4.7-flash-awq:c20bcff57b621645"
  entrypoint = local.entrypoint
  args       = local.args
  env        = local.env
  mounts = [
    { source = var.hub_dir, target = "/hub", read_only = true },
  ]

  # The steps kept as commands run before the container starts and are undone after it stops.
  depends_on = [node_command.mods]
}

output "containers" {
  value = module.recipe.containers
}

output "model_commit" {
  value = module.recipe.model_commit
}
