# cluster.mk — local control plane targets (included by the root Makefile).
#   make cluster-build            build bin/cluster/* (no-op when up to date)
#   make cluster-up [NODES=3] [REAL_NODES=0]
#                                 start etcd/apiserver/kcm/scheduler/kwok/provisioner in .cluster/, plus
#                                 REAL_NODES real nodes (kubelet + containerd, and the local registry)
#   make cluster-down             stop them
# See hack/cluster/README.md for environment variables (ports, AUDIT=1, KWOK_POD_PENDING_STEP=0, ...).
CLUSTER_MK_DIR := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))
NODES ?= 3
REAL_NODES ?= 0

.PHONY: cluster-build cluster-up cluster-down
cluster-build:
	REAL_NODES=$(REAL_NODES) $(CLUSTER_MK_DIR)/build.sh

cluster-up: cluster-build
	REAL_NODES=$(REAL_NODES) $(CLUSTER_MK_DIR)/up.sh --nodes $(NODES)

cluster-down:
	$(CLUSTER_MK_DIR)/down.sh
