// gpuops.bringup's CUDA check: compiled and linked against the shared CUDA
// runtime (device code through cicc and ptxas, the host part through the host
// compiler nvcc picks) by cuda_toolkit's verification on every node, and run
// where a GPU is live, there and by the acceptance stage. On every device it
// sees it runs one kernel and checks the result; one line per device, then a
// summary line. Exit status 1 when CUDA or any device failed.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void increment(int *values, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        values[i] += i;
    }
}

// 0 when the kernel's round trip on the current device gives the expected values.
static cudaError_t round_trip(int *last) {
    const int n = 256;
    int host[n] = {0};
    int *device = nullptr;
    cudaError_t err = cudaMalloc(&device, sizeof(host));
    if (err == cudaSuccess) {
        err = cudaMemcpy(device, host, sizeof(host), cudaMemcpyHostToDevice);
    }
    if (err == cudaSuccess) {
        increment<<<1, n>>>(device, n);
        err = cudaMemcpy(host, device, sizeof(host), cudaMemcpyDeviceToHost);
    }
    cudaFree(device);
    *last = host[n - 1];
    return err;
}

int main() {
    int devices = 0;
    cudaError_t err = cudaGetDeviceCount(&devices);
    if (err != cudaSuccess) {
        std::printf("cudaGetDeviceCount: %s\n", cudaGetErrorString(err));
        return 1;
    }
    int runtime = 0, driver = 0;
    cudaRuntimeGetVersion(&runtime);
    cudaDriverGetVersion(&driver);
    int failed = 0;
    for (int d = 0; d < devices; d++) {
        cudaDeviceProp prop = {};
        int last = -1;
        err = cudaSetDevice(d);
        if (err == cudaSuccess) {
            err = cudaGetDeviceProperties(&prop, d);
        }
        if (err == cudaSuccess) {
            err = round_trip(&last);
        }
        // The PCI address is 0000:00:00 where the device's properties could not be read.
        if (err != cudaSuccess || last != 255) {
            std::printf("device %d %04x:%02x:%02x failed: %s, last value %d\n", d, prop.pciDomainID, prop.pciBusID,
                        prop.pciDeviceID, cudaGetErrorString(err), last);
            failed++;
        } else {
            std::printf("device %d %04x:%02x:%02x %s kernel ok\n", d, prop.pciDomainID, prop.pciBusID, prop.pciDeviceID,
                        prop.name);
        }
    }
    if (failed) {
        std::printf("devices %d runtime %d driver %d failed %d\n", devices, runtime, driver, failed);
        return 1;
    }
    std::printf("devices %d runtime %d driver %d kernel ok\n", devices, runtime, driver);
    return 0;
}
