# SPDX-License-Identifier: MIT
# Thin wrapper over Meson for the README's commands. Each target first installs the Debian
# packages it needs (scripts/deps.sh, idempotent):
#   make        build diskgate and its man pages (deps.sh build)
#   make demo   build, then serve a built-in demo disk and use it with real clients (deps.sh demo)
#   make check  build (plain and ASan+UBSan) and run the whole test suite (deps.sh all)
BUILD ?= build
ASAN_BUILD ?= build-asan

.PHONY: all demo check clean

all:
	@scripts/deps.sh build
	@[ -f $(BUILD)/build.ninja ] || meson setup $(BUILD) >/dev/null
	ninja -C $(BUILD)

demo: all
	@scripts/deps.sh demo
	scripts/demo.sh $(BUILD)/diskgate

# A build directory set up before the test packages were installed (by `make` or `make demo`)
# registered no test that needs them (the rbd tests look for ceph-mon and ceph-osd when meson
# configures): configure it again, with meson's cached look-ups cleared, once they are there.
check:
	@scripts/deps.sh all
	@for d in $(BUILD) $(ASAN_BUILD); do \
	  if [ -f $$d/build.ninja ]; then \
	    meson configure --clearcache $$d && meson setup --reconfigure $$d >/dev/null || exit 1; \
	  fi; \
	done
	scripts/check.sh $(BUILD) $(ASAN_BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
