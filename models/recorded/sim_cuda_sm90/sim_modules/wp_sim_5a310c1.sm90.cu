#define WP_NO_BFLOAT16

#define WP_TILE_BLOCK_DIM 256
#define WP_NO_CRT
#include "builtin.h"
#include "deterministic.h"

// Map wp.breakpoint() to a device brkpt at the call site so cuda-gdb attributes the stop to the generated .cu line
#if defined(__CUDACC__) && !defined(_MSC_VER)
#define __debugbreak() __brkpt()
#endif

#define builtin_tid1d() wp::tid(_idx, dim)
#define builtin_tid2d(x, y) wp::tid(x, y, _idx, dim)
#define builtin_tid3d(x, y, z) wp::tid(x, y, z, _idx, dim)
#define builtin_tid4d(x, y, z, w) wp::tid(x, y, z, w, _idx, dim)

#define builtin_block_dim() wp::block_dim()

// CUDA Thread Block Cluster shape declaration. Expands to __cluster_dims__
// only on devices that support clusters (compute capability 9.0+); otherwise
// expands to nothing so the same source compiles cleanly for any target arch.
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900)
#define WP_CLUSTER_DIMS(x, y, z) __cluster_dims__(x, y, z)
#else
#define WP_CLUSTER_DIMS(x, y, z)
#endif

// Maximum registers per thread. __maxnreg__ was added in CUDA Toolkit 12.4;
// older toolkits ignore the opt-in so the same source remains compilable.
#if defined(__CUDACC_VER_MAJOR__) && (__CUDACC_VER_MAJOR__ > 12 || (__CUDACC_VER_MAJOR__ == 12 && __CUDACC_VER_MINOR__ >= 4))
#define WP_MAXNREG(n) __maxnreg__(n)
#else
#define WP_MAXNREG(n)
#endif

// Allow PTXAS to spill registers into shared memory. CUDA Toolkit 13.0
// introduced the pragma, which is unavailable in device-debug compilation.
#if defined(__CUDACC_VER_MAJOR__) && (__CUDACC_VER_MAJOR__ >= 13) && !defined(_DEBUG)
#define WP_ENABLE_SMEM_SPILLING() asm volatile(".pragma \"enable_smem_spilling\";");
#else
#define WP_ENABLE_SMEM_SPILLING()
#endif


// avoid namespacing of float type for casting to float type, this is to avoid wp::float(x), which is not valid in C++
#define float(x) cast_float(x)
#define adj_float(x, adj_x, adj_ret) adj_cast_float(x, adj_x, adj_ret)

#define int(x) cast_int(x)
#define adj_int(x, adj_x, adj_ret) adj_cast_int(x, adj_x, adj_ret)


struct SimParams_156a3ccd
{
    wp::vec_t<3, wp::float32> gravity;
    wp::float32 dt;
    wp::float32 damping;
    wp::float32 radius;
    wp::float32 max_query_dist;


    SimParams_156a3ccd() = default;
    CUDA_CALLABLE SimParams_156a3ccd(wp::vec_t<3, wp::float32> const& gravity,
    wp::float32 const& dt = {},
    wp::float32 const& damping = {},
    wp::float32 const& radius = {},
    wp::float32 const& max_query_dist = {})
        : gravity{gravity}
        , dt{dt}
        , damping{damping}
        , radius{radius}
        , max_query_dist{max_query_dist}

    {
    }

    CUDA_CALLABLE SimParams_156a3ccd& operator += (const SimParams_156a3ccd& rhs)
    {    gravity += rhs.gravity;
    dt += rhs.dt;
    damping += rhs.damping;
    radius += rhs.radius;
    max_query_dist += rhs.max_query_dist;

        return *this;}

};

static CUDA_CALLABLE void adj_SimParams_156a3ccd(wp::vec_t<3, wp::float32> const&,
    wp::float32 const&,
    wp::float32 const&,
    wp::float32 const&,
    wp::float32 const&,
    wp::vec_t<3, wp::float32> & adj_gravity,
    wp::float32 & adj_dt,
    wp::float32 & adj_damping,
    wp::float32 & adj_radius,
    wp::float32 & adj_max_query_dist,
    SimParams_156a3ccd & adj_ret)
{
    adj_gravity += adj_ret.gravity;
    adj_dt += adj_ret.dt;
    adj_damping += adj_ret.damping;
    adj_radius += adj_ret.radius;
    adj_max_query_dist += adj_ret.max_query_dist;
}

// Required when compiling adjoints.
CUDA_CALLABLE SimParams_156a3ccd add(const SimParams_156a3ccd& a, const SimParams_156a3ccd& b)
{
    return SimParams_156a3ccd();
}

CUDA_CALLABLE void adj_atomic_add(SimParams_156a3ccd* p, SimParams_156a3ccd t)
{
    wp::adj_atomic_add(&p->gravity, t.gravity);
    wp::adj_atomic_add(&p->dt, t.dt);
    wp::adj_atomic_add(&p->damping, t.damping);
    wp::adj_atomic_add(&p->radius, t.radius);
    wp::adj_atomic_add(&p->max_query_dist, t.max_query_dist);
}





extern "C" __global__ void displacement_242040a5_cuda_kernel_forward(
    wp::launch_bounds_t<1> dim,
    wp::array_t<wp::vec_t<3, wp::float32>> var_x,
    wp::array_t<wp::vec_t<3, wp::float32>> var_x_start,
    wp::array_t<wp::float32> var_out)
{
    wp::tile_shared_storage_t tile_mem;

    for (size_t _idx = static_cast<size_t>(blockDim.x) * static_cast<size_t>(blockIdx.x) + static_cast<size_t>(threadIdx.x);
         _idx < dim.size;
         _idx += static_cast<size_t>(blockDim.x) * static_cast<size_t>(gridDim.x))
    {
            // reset shared memory allocator
        wp::tile_shared_storage_t::init();

        //---------
        // primal vars
        wp::int32 var_0;
        wp::vec_t<3, wp::float32>* var_1;
        wp::vec_t<3, wp::float32>* var_2;
        wp::vec_t<3, wp::float32> var_3;
        wp::vec_t<3, wp::float32> var_4;
        wp::vec_t<3, wp::float32> var_5;
        wp::float32 var_6;
        //---------
        // forward
        // def displacement(x: wp.array(dtype=wp.vec3), x_start: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):       <L 79>
        // i = wp.tid()                                                                           <L 80>
        var_0 = builtin_tid1d();
        // out[i] = wp.length(x[i] - x_start[i])                                                  <L 81>
        var_1 = wp::address(var_x, var_0);
        var_2 = wp::address(var_x_start, var_0);
        var_4 = wp::load(var_1);
        var_5 = wp::load(var_2);
        var_3 = wp::sub(var_4, var_5);
        var_6 = wp::length(var_3);
        wp::array_store(var_out, var_0, var_6);
    }
}



extern "C" __global__ void displacement_242040a5_cuda_kernel_backward(
    wp::launch_bounds_t<1> dim,
    wp::array_t<wp::vec_t<3, wp::float32>> var_x,
    wp::array_t<wp::vec_t<3, wp::float32>> var_x_start,
    wp::array_t<wp::float32> var_out,
    wp::array_t<wp::vec_t<3, wp::float32>> adj_x,
    wp::array_t<wp::vec_t<3, wp::float32>> adj_x_start,
    wp::array_t<wp::float32> adj_out)
{
    wp::tile_shared_storage_t tile_mem;

    for (size_t _idx = static_cast<size_t>(blockDim.x) * static_cast<size_t>(blockIdx.x) + static_cast<size_t>(threadIdx.x);
         _idx < dim.size;
         _idx += static_cast<size_t>(blockDim.x) * static_cast<size_t>(gridDim.x))
    {
            // reset shared memory allocator
        wp::tile_shared_storage_t::init();

        //---------
        // primal vars
        wp::int32 var_0;
        wp::vec_t<3, wp::float32>* var_1;
        wp::vec_t<3, wp::float32>* var_2;
        wp::vec_t<3, wp::float32> var_3;
        wp::vec_t<3, wp::float32> var_4;
        wp::vec_t<3, wp::float32> var_5;
        wp::float32 var_6;
        //---------
        // dual vars
        wp::int32 adj_0 = {};
        wp::vec_t<3, wp::float32> adj_1 = {};
        wp::vec_t<3, wp::float32> adj_2 = {};
        wp::vec_t<3, wp::float32> adj_3 = {};
        wp::vec_t<3, wp::float32> adj_4 = {};
        wp::vec_t<3, wp::float32> adj_5 = {};
        wp::float32 adj_6 = {};
        //---------
        // forward
        // def displacement(x: wp.array(dtype=wp.vec3), x_start: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):       <L 79>
        // i = wp.tid()                                                                           <L 80>
        var_0 = builtin_tid1d();
        // out[i] = wp.length(x[i] - x_start[i])                                                  <L 81>
        var_1 = wp::address(var_x, var_0);
        var_2 = wp::address(var_x_start, var_0);
        var_4 = wp::load(var_1);
        var_5 = wp::load(var_2);
        var_3 = wp::sub(var_4, var_5);
        var_6 = wp::length(var_3);
        // wp::array_store(var_out, var_0, var_6);
        //---------
        // reverse
        wp::adj_array_store(var_out, var_0, var_6, adj_out, adj_0, adj_6);
        wp::adj_length(var_3, var_6, adj_3, adj_6);
        wp::adj_sub(var_4, var_5, adj_1, adj_2, adj_3);
        wp::adj_address(var_x_start, var_0, adj_x_start, adj_0, adj_2);
        wp::adj_address(var_x, var_0, adj_x, adj_0, adj_1);
        // adj: out[i] = wp.length(x[i] - x_start[i])                                             <L 81>
        // adj: i = wp.tid()                                                                      <L 80>
        // adj: def displacement(x: wp.array(dtype=wp.vec3), x_start: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):  <L 79>
        continue;
    }
}



extern "C" __global__ void record_energy_49662166_cuda_kernel_forward(
    wp::launch_bounds_t<1> dim,
    wp::array_t<wp::vec_t<3, wp::float32>> var_x,
    wp::array_t<wp::vec_t<3, wp::float32>> var_v,
    SimParams_156a3ccd var_params,
    wp::array_t<wp::float32> var_energy,
    wp::int32 var_step)
{
    wp::tile_shared_storage_t tile_mem;

    for (size_t _idx = static_cast<size_t>(blockDim.x) * static_cast<size_t>(blockIdx.x) + static_cast<size_t>(threadIdx.x);
         _idx < dim.size;
         _idx += static_cast<size_t>(blockDim.x) * static_cast<size_t>(gridDim.x))
    {
            // reset shared memory allocator
        wp::tile_shared_storage_t::init();

        //---------
        // primal vars
        const wp::float32 var_0 = 0.0;
        wp::float32 var_1;
        wp::shape_t* var_2;
        const wp::int32 var_3 = 0;
        wp::int32 var_4;
        wp::shape_t var_5;
        wp::range_t var_6;
        wp::int32 var_7;
        const wp::float32 var_8 = 0.5;
        wp::vec_t<3, wp::float32>* var_9;
        wp::vec_t<3, wp::float32>* var_10;
        wp::float32 var_11;
        wp::vec_t<3, wp::float32> var_12;
        wp::vec_t<3, wp::float32> var_13;
        wp::float32 var_14;
        wp::vec_t<3, wp::float32>* var_15;
        wp::vec_t<3, wp::float32>* var_16;
        wp::float32 var_17;
        wp::vec_t<3, wp::float32> var_18;
        wp::vec_t<3, wp::float32> var_19;
        wp::float32 var_20;
        wp::float32 var_21;
        //---------
        // forward
        // def record_energy(                                                                     <L 60>
        // total = float(0.0)  # noqa: UP018 - Warp needs the constructor for a loop-carried variable       <L 72>
        var_1 = wp::float(var_0);
        // for i in range(x.shape[0]):                                                            <L 73>
        var_2 = &(var_x.shape);
        var_5 = wp::load(var_2);
        var_4 = wp::extract(var_5, var_3);
        var_6 = wp::range(var_4);
        start_for_0:;
            if (iter_cmp(var_6) == 0) goto end_for_0;
            var_7 = wp::iter_next(var_6);
            // total += 0.5 * wp.dot(v[i], v[i]) - wp.dot(params.gravity, x[i])                   <L 74>
            var_9 = wp::address(var_v, var_7);
            var_10 = wp::address(var_v, var_7);
            var_12 = wp::load(var_9);
            var_13 = wp::load(var_10);
            var_11 = wp::dot(var_12, var_13);
            var_14 = wp::mul(var_8, var_11);
            var_15 = &((var_params).gravity);
            var_16 = wp::address(var_x, var_7);
            var_18 = wp::load(var_15);
            var_19 = wp::load(var_16);
            var_17 = wp::dot(var_18, var_19);
            var_20 = wp::sub(var_14, var_17);
            var_21 = wp::add(var_1, var_20);
            wp::assign(var_1, var_21);
            goto start_for_0;
        end_for_0:;
        // energy[step] = total                                                                   <L 75>
        wp::array_store(var_energy, var_step, var_1);
    }
}



extern "C" __global__ void record_energy_49662166_cuda_kernel_backward(
    wp::launch_bounds_t<1> dim,
    wp::array_t<wp::vec_t<3, wp::float32>> var_x,
    wp::array_t<wp::vec_t<3, wp::float32>> var_v,
    SimParams_156a3ccd var_params,
    wp::array_t<wp::float32> var_energy,
    wp::int32 var_step,
    wp::array_t<wp::vec_t<3, wp::float32>> adj_x,
    wp::array_t<wp::vec_t<3, wp::float32>> adj_v,
    SimParams_156a3ccd adj_params,
    wp::array_t<wp::float32> adj_energy,
    wp::int32 adj_step)
{
    wp::tile_shared_storage_t tile_mem;

    for (size_t _idx = static_cast<size_t>(blockDim.x) * static_cast<size_t>(blockIdx.x) + static_cast<size_t>(threadIdx.x);
         _idx < dim.size;
         _idx += static_cast<size_t>(blockDim.x) * static_cast<size_t>(gridDim.x))
    {
            // reset shared memory allocator
        wp::tile_shared_storage_t::init();

        //---------
        // primal vars
        const wp::float32 var_0 = 0.0;
        wp::float32 var_1;
        wp::shape_t* var_2;
        const wp::int32 var_3 = 0;
        wp::int32 var_4;
        wp::shape_t var_5;
        wp::range_t var_6;
        wp::int32 var_7;
        const wp::float32 var_8 = 0.5;
        wp::vec_t<3, wp::float32>* var_9;
        wp::vec_t<3, wp::float32>* var_10;
        wp::float32 var_11;
        wp::vec_t<3, wp::float32> var_12;
        wp::vec_t<3, wp::float32> var_13;
        wp::float32 var_14;
        wp::vec_t<3, wp::float32>* var_15;
        wp::vec_t<3, wp::float32>* var_16;
        wp::float32 var_17;
        wp::vec_t<3, wp::float32> var_18;
        wp::vec_t<3, wp::float32> var_19;
        wp::float32 var_20;
        wp::float32 var_21;
        //---------
        // dual vars
        wp::float32 adj_0 = {};
        wp::float32 adj_1 = {};
        wp::shape_t adj_2 = {};
        wp::int32 adj_3 = {};
        wp::int32 adj_4 = {};
        wp::shape_t adj_5 = {};
        wp::range_t adj_6 = {};
        wp::int32 adj_7 = {};
        wp::float32 adj_8 = {};
        wp::vec_t<3, wp::float32> adj_9 = {};
        wp::vec_t<3, wp::float32> adj_10 = {};
        wp::float32 adj_11 = {};
        wp::vec_t<3, wp::float32> adj_12 = {};
        wp::vec_t<3, wp::float32> adj_13 = {};
        wp::float32 adj_14 = {};
        wp::vec_t<3, wp::float32> adj_15 = {};
        wp::vec_t<3, wp::float32> adj_16 = {};
        wp::float32 adj_17 = {};
        wp::vec_t<3, wp::float32> adj_18 = {};
        wp::vec_t<3, wp::float32> adj_19 = {};
        wp::float32 adj_20 = {};
        wp::float32 adj_21 = {};
        //---------
        // forward
        // def record_energy(                                                                     <L 60>
        // total = float(0.0)  # noqa: UP018 - Warp needs the constructor for a loop-carried variable       <L 72>
        var_1 = wp::float(var_0);
        // for i in range(x.shape[0]):                                                            <L 73>
        var_2 = &(var_x.shape);
        var_5 = wp::load(var_2);
        var_4 = wp::extract(var_5, var_3);
        var_6 = wp::range(var_4);
        // energy[step] = total                                                                   <L 75>
        // wp::array_store(var_energy, var_step, var_1);
        //---------
        // reverse
        wp::adj_array_store(var_energy, var_step, var_1, adj_energy, adj_step, adj_1);
        // adj: energy[step] = total                                                              <L 75>
        var_6 = wp::iter_reverse(var_6);
        start_for_0:;
            if (iter_cmp(var_6) == 0) goto end_for_0;
            var_7 = wp::iter_next(var_6);
        	adj_8 = {};
        	adj_9 = {};
        	adj_10 = {};
        	adj_11 = {};
        	adj_12 = {};
        	adj_13 = {};
        	adj_14 = {};
        	adj_15 = {};
        	adj_16 = {};
        	adj_17 = {};
        	adj_18 = {};
        	adj_19 = {};
        	adj_20 = {};
        	adj_21 = {};
            // total += 0.5 * wp.dot(v[i], v[i]) - wp.dot(params.gravity, x[i])                   <L 74>
            var_9 = wp::address(var_v, var_7);
            var_10 = wp::address(var_v, var_7);
            var_12 = wp::load(var_9);
            var_13 = wp::load(var_10);
            var_11 = wp::dot(var_12, var_13);
            var_14 = wp::mul(var_8, var_11);
            var_15 = &((var_params).gravity);
            var_16 = wp::address(var_x, var_7);
            var_18 = wp::load(var_15);
            var_19 = wp::load(var_16);
            var_17 = wp::dot(var_18, var_19);
            var_20 = wp::sub(var_14, var_17);
            var_21 = wp::add(var_1, var_20);
            wp::assign(var_1, var_21);
            wp::adj_assign(var_1, var_21, adj_1, adj_21);
            wp::adj_add(var_1, var_20, adj_1, adj_20, adj_21);
            wp::adj_sub(var_14, var_17, adj_14, adj_17, adj_20);
            wp::adj_dot(var_18, var_19, adj_15, adj_16, adj_17);
            wp::adj_address(var_x, var_7, adj_x, adj_7, adj_16);
            adj_params.gravity += adj_15;
            wp::adj_mul(var_8, var_11, adj_8, adj_11, adj_14);
            wp::adj_dot(var_12, var_13, adj_9, adj_10, adj_11);
            wp::adj_address(var_v, var_7, adj_v, adj_7, adj_10);
            wp::adj_address(var_v, var_7, adj_v, adj_7, adj_9);
            // adj: total += 0.5 * wp.dot(v[i], v[i]) - wp.dot(params.gravity, x[i])              <L 74>
        	goto start_for_0;
        end_for_0:;
        adj_x.shape = adj_2;
        // adj: for i in range(x.shape[0]):                                                       <L 73>
        wp::adj_float(var_0, adj_0, adj_1);
        // adj: total = float(0.0)  # noqa: UP018 - Warp needs the constructor for a loop-carried variable  <L 72>
        // adj: def record_energy(                                                                <L 60>
        continue;
    }
}

