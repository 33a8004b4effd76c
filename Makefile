# Thin wrapper over CMake.  The two set-up commands of the README:
#   make demo    install what is missing, build, profile the bundled example
#   make check   install, build with -Werror, run the tests, then again under
#                ASan+UBSan, then the fuzz targets for a short while
JOBS ?= $(shell nproc)
BUILD ?= build
CMAKE_FLAGS ?=
FUZZ_SECONDS ?= 20

.PHONY: all deps build demo check test test-asan fuzz bench clean

all: build

deps-%:
	@scripts/deps.sh $*

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >/dev/null

build: deps-build $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

demo: deps-demo build
	@scripts/demo.sh $(BUILD)

test: deps-check
	cmake -S . -B build-check -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTPROF_WERROR=ON >/dev/null
	cmake --build build-check -j $(JOBS)
	ctest --test-dir build-check --output-on-failure -j $(JOBS)

test-asan: deps-check
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DSTPROF_WERROR=ON -DSTPROF_SANITIZE=ON >/dev/null
	cmake --build build-asan -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir build-asan --output-on-failure -j $(JOBS)

fuzz: deps-check
	CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DSTPROF_FUZZ=ON >/dev/null
	cmake --build build-fuzz -j $(JOBS) --target fuzz_targets
	scripts/fuzz.sh build-fuzz $(FUZZ_SECONDS)

check: test test-asan fuzz
	@echo "stprof: make check passed"

bench: deps-bench build
	@scripts/bench.sh $(BUILD)

clean:
	rm -rf build build-check build-asan build-fuzz
