# Wraps the CMake build for the README's commands:
#   make run    build, then run egressd with the embedded default policy
#   make test   install dependencies, build, run every test
#   make install  build, then install egressd, policyctl, sandbox-init and
#               opencode-sandbox into $(PREFIX)/bin (PREFIX=/usr/local), their
#               man pages, completions and the image's build inputs
#               (DESTDIR for staging)
#   make package  a Debian package, opencode-sandbox_VERSION_ARCH.deb, built
#               in $(BUILD)-package for /usr
# Both install the Debian packages they need first (scripts/install-deps,
# idempotent): `make run` and `make build` only what building and running
# egressd needs (--run); test, lint, sanitize, fuzz and bench the whole
# set. Other targets: lint, sanitize, fuzz, bench, format, format-check.

BUILD     ?= build
JOBS      ?= $(shell nproc 2>/dev/null || echo 2)
# -Werror in CI (CI=true), plain warnings for people building at home.
WERROR    ?= $(if $(CI),ON,OFF)
FUZZ_TIME ?= 60
PREFIX    ?= /usr/local

CMAKE_FLAGS = -DEGRESS_WERROR=$(WERROR)

.PHONY: all deps deps-run build run test install package lint sanitize soak fuzz bench format format-check clean

all: build

deps:
	@scripts/install-deps

deps-run:
	@scripts/install-deps --run

define configure_and_build
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null
	cmake --build $(BUILD) -j $(JOBS)
endef

build: deps-run
	$(configure_and_build)

# The main job: egressd with the embedded default policy on 127.0.0.1:18080,
# printing the lines to paste into a shell. Ctrl-C stops it.
run: build
	$(BUILD)/policyctl check >/dev/null
	$(BUILD)/egressd

test: deps
	$(configure_and_build)
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# The four binaries into $(PREFIX)/bin, the man pages, the completions and
# the image's build inputs under $(PREFIX)/share (DESTDIR for staging).
install: build
	cmake -S . -B $(BUILD) -DCMAKE_INSTALL_PREFIX=$(PREFIX) >/dev/null
	cmake --build $(BUILD) -j $(JOBS)
	DESTDIR=$(DESTDIR) cmake --install $(BUILD)

# A Debian package for /usr (apt install ./opencode-sandbox_*.deb), built
# apart from $(BUILD), whose install prefix is PREFIX's.
package: deps
	cmake -S . -B $(BUILD)-package $(CMAKE_FLAGS) -DCMAKE_BUILD_TYPE=Release \
		-DCMAKE_INSTALL_PREFIX=/usr >/dev/null
	cmake --build $(BUILD)-package -j $(JOBS)
	cd $(BUILD)-package && cpack -G DEB
	@ls $(BUILD)-package/opencode-sandbox_*.deb

# shellcheck and pyflakes over every shell and Python script, and the
# include rules of DESIGN §2 over the C tree (scripts/lint).
lint: deps
	scripts/lint

# Unit, engine and integration suites under AddressSanitizer + UndefinedBehaviorSanitizer.
sanitize: deps
	cmake -S . -B build-asan $(CMAKE_FLAGS) -DEGRESS_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
		UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		ctest --output-on-failure -j $(JOBS) -L 'unit|engine|integration'

# The reliability suite at full length: a 30-minute soak (SOAK_SECONDS),
# the scale, fault, full-disk and memory-limit tests (tests/soak/).
SOAK_SECONDS ?= 1800
soak: deps
	$(configure_and_build)
	cd $(BUILD) && SOAK_SECONDS=$(SOAK_SECONDS) ctest --output-on-failure -L soak

# libFuzzer targets (clang); each runs FUZZ_TIME seconds from its seed corpus.
fuzz: deps
	CC=clang cmake -S . -B build-fuzz -DEGRESS_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build build-fuzz -j $(JOBS)
	@for f in build-fuzz/fuzz_*; do \
		name=$$(basename $$f); mkdir -p build-fuzz/corpus/$$name; \
		echo "== $$name ($(FUZZ_TIME)s)"; \
		$$f -max_total_time=$(FUZZ_TIME) -print_final_stats=1 \
			build-fuzz/corpus/$$name tests/fuzz/corpus/$$name || exit 1; \
	done

bench: deps
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS) -DEGRESS_BENCH=ON >/dev/null
	cmake --build $(BUILD) -j $(JOBS)
	$(BUILD)/bench_domain
	$(BUILD)/bench_mint
	cd $(BUILD) && ./bench_audit && rm -f bench_audit.jsonl

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

format-check:
	clang-format --dry-run -Werror $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD) $(BUILD)-package build-asan build-fuzz
