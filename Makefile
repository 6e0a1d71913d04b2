# Thin wrapper over Meson for the README's two commands.
#   make demo   build, then serve a built-in demo disk and use it with real clients
#   make check  build (plain and ASan+UBSan) and run the whole test suite
BUILD ?= build
ASAN_BUILD ?= build-asan

.PHONY: all deps demo check check-plain check-asan clean

all: deps
	@[ -f $(BUILD)/build.ninja ] || meson setup $(BUILD) >/dev/null
	ninja -C $(BUILD)

deps:
	@scripts/deps.sh all

demo: all
	scripts/demo.sh $(BUILD)/diskgate

check: deps
	scripts/check.sh $(BUILD) $(ASAN_BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
