// gpuhold holds GPU memory for a while, through the CUDA driver API loaded at run time (no CUDA toolkit needed to
// build it): `gpuhold BYTES SECONDS` allocates BYTES on GPU 0, says so on stdout, and sleeps SECONDS. The real-GPU
// check (hack/gpu-check/run.sh) runs it so that NVML has memory in use to report.
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef unsigned long long CUdeviceptr;

int main(int argc, char **argv) {
	size_t bytes = argc > 1 ? strtoull(argv[1], NULL, 10) : (size_t)1 << 30;
	int secs = argc > 2 ? atoi(argv[2]) : 60;
	void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
	if (!cuda) {
		fprintf(stderr, "gpuhold: loading the CUDA driver: %s\n", dlerror());
		return 1;
	}
	CUresult (*init)(unsigned) = (CUresult(*)(unsigned))dlsym(cuda, "cuInit");
	CUresult (*deviceGet)(CUdevice *, int) = (CUresult(*)(CUdevice *, int))dlsym(cuda, "cuDeviceGet");
	CUresult (*ctxCreate)(CUcontext *, unsigned, CUdevice) = (CUresult(*)(CUcontext *, unsigned, CUdevice))dlsym(cuda, "cuCtxCreate_v2");
	CUresult (*memAlloc)(CUdeviceptr *, size_t) = (CUresult(*)(CUdeviceptr *, size_t))dlsym(cuda, "cuMemAlloc_v2");
	if (!init || !deviceGet || !ctxCreate || !memAlloc) {
		fprintf(stderr, "gpuhold: the CUDA driver lacks cuInit, cuDeviceGet, cuCtxCreate_v2 or cuMemAlloc_v2\n");
		return 1;
	}
	CUdevice dev;
	CUcontext ctx;
	CUdeviceptr ptr;
	CUresult r;
	if ((r = init(0)) != 0 || (r = deviceGet(&dev, 0)) != 0 || (r = ctxCreate(&ctx, 0, dev)) != 0 || (r = memAlloc(&ptr, bytes)) != 0) {
		fprintf(stderr, "gpuhold: CUDA error %d\n", r);
		return 1;
	}
	printf("gpuhold: pid %d holds %zu bytes on GPU 0 for %d s\n", (int)getpid(), bytes, secs);
	fflush(stdout);
	sleep(secs);
	return 0;
}
