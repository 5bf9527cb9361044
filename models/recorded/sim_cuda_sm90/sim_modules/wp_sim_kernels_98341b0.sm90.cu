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





extern "C" __global__ void integrate_375ed685_cuda_kernel_forward(
    wp::launch_bounds_t<1> dim,
    wp::array_t<wp::vec_t<3, wp::float32>> var_x,
    wp::array_t<wp::vec_t<3, wp::float32>> var_v,
    SimParams_156a3ccd var_params)
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
        wp::float32* var_3;
        wp::vec_t<3, wp::float32> var_4;
        wp::vec_t<3, wp::float32> var_5;
        wp::float32 var_6;
        wp::vec_t<3, wp::float32> var_7;
        wp::vec_t<3, wp::float32> var_8;
        wp::float32* var_9;
        wp::vec_t<3, wp::float32> var_10;
        wp::float32 var_11;
        wp::vec_t<3, wp::float32>* var_12;
        wp::float32* var_13;
        wp::vec_t<3, wp::float32> var_14;
        wp::float32 var_15;
        wp::vec_t<3, wp::float32> var_16;
        wp::vec_t<3, wp::float32> var_17;
        //---------
        // forward
        // def integrate(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), params: SimParams):       <L 22>
        // i = wp.tid()                                                                           <L 24>
        var_0 = builtin_tid1d();
        // vel = (v[i] + params.gravity * params.dt) * params.damping                             <L 25>
        var_1 = wp::address(var_v, var_0);
        var_2 = &((var_params).gravity);
        var_3 = &((var_params).dt);
        var_5 = wp::load(var_2);
        var_6 = wp::load(var_3);
        var_4 = wp::mul(var_5, var_6);
        var_8 = wp::load(var_1);
        var_7 = wp::add(var_8, var_4);
        var_9 = &((var_params).damping);
        var_11 = wp::load(var_9);
        var_10 = wp::mul(var_7, var_11);
        // v[i] = vel                                                                             <L 26>
        wp::array_store(var_v, var_0, var_10);
        // x[i] = x[i] + vel * params.dt                                                          <L 27>
        var_12 = wp::address(var_x, var_0);
        var_13 = &((var_params).dt);
        var_15 = wp::load(var_13);
        var_14 = wp::mul(var_10, var_15);
        var_17 = wp::load(var_12);
        var_16 = wp::add(var_17, var_14);
        wp::array_store(var_x, var_0, var_16);
    }
}



extern "C" __global__ void integrate_375ed685_cuda_kernel_backward(
    wp::launch_bounds_t<1> dim,
    wp::array_t<wp::vec_t<3, wp::float32>> var_x,
    wp::array_t<wp::vec_t<3, wp::float32>> var_v,
    SimParams_156a3ccd var_params,
    wp::array_t<wp::vec_t<3, wp::float32>> adj_x,
    wp::array_t<wp::vec_t<3, wp::float32>> adj_v,
    SimParams_156a3ccd adj_params)
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
        wp::float32* var_3;
        wp::vec_t<3, wp::float32> var_4;
        wp::vec_t<3, wp::float32> var_5;
        wp::float32 var_6;
        wp::vec_t<3, wp::float32> var_7;
        wp::vec_t<3, wp::float32> var_8;
        wp::float32* var_9;
        wp::vec_t<3, wp::float32> var_10;
        wp::float32 var_11;
        wp::vec_t<3, wp::float32>* var_12;
        wp::float32* var_13;
        wp::vec_t<3, wp::float32> var_14;
        wp::float32 var_15;
        wp::vec_t<3, wp::float32> var_16;
        wp::vec_t<3, wp::float32> var_17;
        //---------
        // dual vars
        wp::int32 adj_0 = {};
        wp::vec_t<3, wp::float32> adj_1 = {};
        wp::vec_t<3, wp::float32> adj_2 = {};
        wp::float32 adj_3 = {};
        wp::vec_t<3, wp::float32> adj_4 = {};
        wp::vec_t<3, wp::float32> adj_5 = {};
        wp::float32 adj_6 = {};
        wp::vec_t<3, wp::float32> adj_7 = {};
        wp::vec_t<3, wp::float32> adj_8 = {};
        wp::float32 adj_9 = {};
        wp::vec_t<3, wp::float32> adj_10 = {};
        wp::float32 adj_11 = {};
        wp::vec_t<3, wp::float32> adj_12 = {};
        wp::float32 adj_13 = {};
        wp::vec_t<3, wp::float32> adj_14 = {};
        wp::float32 adj_15 = {};
        wp::vec_t<3, wp::float32> adj_16 = {};
        wp::vec_t<3, wp::float32> adj_17 = {};
        //---------
        // forward
        // def integrate(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), params: SimParams):       <L 22>
        // i = wp.tid()                                                                           <L 24>
        var_0 = builtin_tid1d();
        // vel = (v[i] + params.gravity * params.dt) * params.damping                             <L 25>
        var_1 = wp::address(var_v, var_0);
        var_2 = &((var_params).gravity);
        var_3 = &((var_params).dt);
        var_5 = wp::load(var_2);
        var_6 = wp::load(var_3);
        var_4 = wp::mul(var_5, var_6);
        var_8 = wp::load(var_1);
        var_7 = wp::add(var_8, var_4);
        var_9 = &((var_params).damping);
        var_11 = wp::load(var_9);
        var_10 = wp::mul(var_7, var_11);
        // v[i] = vel                                                                             <L 26>
        // wp::array_store(var_v, var_0, var_10);
        // x[i] = x[i] + vel * params.dt                                                          <L 27>
        var_12 = wp::address(var_x, var_0);
        var_13 = &((var_params).dt);
        var_15 = wp::load(var_13);
        var_14 = wp::mul(var_10, var_15);
        var_17 = wp::load(var_12);
        var_16 = wp::add(var_17, var_14);
        // wp::array_store(var_x, var_0, var_16);
        //---------
        // reverse
        wp::adj_array_store(var_x, var_0, var_16, adj_x, adj_0, adj_16);
        wp::adj_add(var_17, var_14, adj_12, adj_14, adj_16);
        wp::adj_mul(var_10, var_15, adj_10, adj_13, adj_14);
        adj_params.dt += adj_13;
        wp::adj_address(var_x, var_0, adj_x, adj_0, adj_12);
        // adj: x[i] = x[i] + vel * params.dt                                                     <L 27>
        wp::adj_array_store(var_v, var_0, var_10, adj_v, adj_0, adj_10);
        // adj: v[i] = vel                                                                        <L 26>
        wp::adj_mul(var_7, var_11, adj_7, adj_9, adj_10);
        adj_params.damping += adj_9;
        wp::adj_add(var_8, var_4, adj_1, adj_4, adj_7);
        wp::adj_mul(var_5, var_6, adj_2, adj_3, adj_4);
        adj_params.dt += adj_3;
        adj_params.gravity += adj_2;
        wp::adj_address(var_v, var_0, adj_v, adj_0, adj_1);
        // adj: vel = (v[i] + params.gravity * params.dt) * params.damping                        <L 25>
        // adj: i = wp.tid()                                                                      <L 24>
        // adj: def integrate(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), params: SimParams):  <L 22>
        continue;
    }
}



extern "C" __global__ void collide_mesh_5f8213e4_cuda_kernel_forward(
    wp::launch_bounds_t<1> dim,
    wp::uint64 var_mesh,
    wp::array_t<wp::vec_t<3, wp::float32>> var_x,
    wp::array_t<wp::vec_t<3, wp::float32>> var_v,
    SimParams_156a3ccd var_params,
    wp::array_t<wp::int32> var_contacts,
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
        wp::int32 var_0;
        wp::vec_t<3, wp::float32>* var_1;
        wp::vec_t<3, wp::float32> var_2;
        wp::vec_t<3, wp::float32> var_3;
        wp::float32* var_4;
        wp::mesh_query_point_t var_5;
        wp::float32 var_6;
        bool* var_7;
        bool var_8;
        bool var_9;
        wp::int32* var_10;
        wp::float32* var_11;
        wp::float32* var_12;
        wp::vec_t<3, wp::float32> var_13;
        wp::int32 var_14;
        wp::float32 var_15;
        wp::float32 var_16;
        wp::int32* var_17;
        wp::vec_t<3, wp::float32> var_18;
        wp::int32 var_19;
        wp::vec_t<3, wp::float32> var_20;
        wp::float32 var_21;
        wp::float32* var_22;
        bool var_23;
        wp::float32 var_24;
        const wp::float32 var_25 = 0.0;
        wp::float32* var_26;
        wp::float32 var_27;
        wp::float32 var_28;
        const wp::int32 var_29 = 1;
        wp::float32 var_30;
        wp::float32 var_31;
        const wp::float32 var_32 = 0.0;
        wp::vec_t<3, wp::float32> var_33;
        wp::vec_t<3, wp::float32> var_34;
        const wp::float32 var_35 = 0.0;
        const wp::float32 var_36 = 0.0;
        const wp::float32 var_37 = 0.0;
        wp::vec_t<3, wp::float32> var_38;
        const wp::int32 var_39 = 1;
        wp::int32 var_40;
        //---------
        // forward
        // def collide_mesh(                                                                      <L 31>
        // i = wp.tid()                                                                           <L 50>
        var_0 = builtin_tid1d();
        // p = x[i]                                                                               <L 51>
        var_1 = wp::address(var_x, var_0);
        var_3 = wp::load(var_1);
        var_2 = wp::copy(var_3);
        // query = wp.mesh_query_point_no_sign(mesh, p, params.max_query_dist)                    <L 52>
        var_4 = &((var_params).max_query_dist);
        var_6 = wp::load(var_4);
        var_5 = wp::mesh_query_point_no_sign(var_mesh, var_2, var_6);
        // if not query.result:                                                                   <L 53>
        var_7 = &((var_5).result);
        var_9 = wp::load(var_7);
        var_8 = wp::unot(var_9);
        if (var_8) {
            // return                                                                             <L 54>
            continue;
        }
        // closest = wp.mesh_eval_position(mesh, query.face, query.u, query.v)                    <L 55>
        var_10 = &((var_5).face);
        var_11 = &((var_5).u);
        var_12 = &((var_5).v);
        var_14 = wp::load(var_10);
        var_15 = wp::load(var_11);
        var_16 = wp::load(var_12);
        var_13 = wp::mesh_eval_position(var_mesh, var_14, var_15, var_16);
        // face_normal = wp.mesh_eval_face_normal(mesh, query.face)                               <L 56>
        var_17 = &((var_5).face);
        var_19 = wp::load(var_17);
        var_18 = wp::mesh_eval_face_normal(var_mesh, var_19);
        // height = wp.dot(p - closest, face_normal)                                              <L 58>
        var_20 = wp::sub(var_2, var_13);
        var_21 = wp::dot(var_20, var_18);
        // if height >= params.radius:                                                            <L 59>
        var_22 = &((var_params).radius);
        var_24 = wp::load(var_22);
        var_23 = (var_21 >= var_24);
        if (var_23) {
            // return                                                                             <L 60>
            continue;
        }
        // x[i] = p + wp.vec3(0.0, (params.radius - height) / face_normal[1], 0.0)                <L 61>
        var_26 = &((var_params).radius);
        var_28 = wp::load(var_26);
        var_27 = wp::sub(var_28, var_21);
        var_30 = wp::extract(var_18, var_29);
        var_31 = wp::div(var_27, var_30);
        var_33 = wp::vec_t<3, wp::float32>(var_25, var_31, var_32);
        var_34 = wp::add(var_2, var_33);
        wp::array_store(var_x, var_0, var_34);
        // v[i] = wp.vec3(0.0, 0.0, 0.0)                                                          <L 62>
        var_38 = wp::vec_t<3, wp::float32>(var_35, var_36, var_37);
        wp::array_store(var_v, var_0, var_38);
        // wp.atomic_add(contacts, step, 1)                                                       <L 63>
        var_40 = wp::atomic_add(var_contacts, var_step, var_39);
    }
}



extern "C" __global__ void collide_mesh_5f8213e4_cuda_kernel_backward(
    wp::launch_bounds_t<1> dim,
    wp::uint64 var_mesh,
    wp::array_t<wp::vec_t<3, wp::float32>> var_x,
    wp::array_t<wp::vec_t<3, wp::float32>> var_v,
    SimParams_156a3ccd var_params,
    wp::array_t<wp::int32> var_contacts,
    wp::int32 var_step,
    wp::uint64 adj_mesh,
    wp::array_t<wp::vec_t<3, wp::float32>> adj_x,
    wp::array_t<wp::vec_t<3, wp::float32>> adj_v,
    SimParams_156a3ccd adj_params,
    wp::array_t<wp::int32> adj_contacts,
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
        wp::int32 var_0;
        wp::vec_t<3, wp::float32>* var_1;
        wp::vec_t<3, wp::float32> var_2;
        wp::vec_t<3, wp::float32> var_3;
        wp::float32* var_4;
        wp::mesh_query_point_t var_5;
        wp::float32 var_6;
        bool* var_7;
        bool var_8;
        bool var_9;
        wp::int32* var_10;
        wp::float32* var_11;
        wp::float32* var_12;
        wp::vec_t<3, wp::float32> var_13;
        wp::int32 var_14;
        wp::float32 var_15;
        wp::float32 var_16;
        wp::int32* var_17;
        wp::vec_t<3, wp::float32> var_18;
        wp::int32 var_19;
        wp::vec_t<3, wp::float32> var_20;
        wp::float32 var_21;
        wp::float32* var_22;
        bool var_23;
        wp::float32 var_24;
        const wp::float32 var_25 = 0.0;
        wp::float32* var_26;
        wp::float32 var_27;
        wp::float32 var_28;
        const wp::int32 var_29 = 1;
        wp::float32 var_30;
        wp::float32 var_31;
        const wp::float32 var_32 = 0.0;
        wp::vec_t<3, wp::float32> var_33;
        wp::vec_t<3, wp::float32> var_34;
        const wp::float32 var_35 = 0.0;
        const wp::float32 var_36 = 0.0;
        const wp::float32 var_37 = 0.0;
        wp::vec_t<3, wp::float32> var_38;
        const wp::int32 var_39 = 1;
        wp::int32 var_40;
        //---------
        // dual vars
        wp::int32 adj_0 = {};
        wp::vec_t<3, wp::float32> adj_1 = {};
        wp::vec_t<3, wp::float32> adj_2 = {};
        wp::vec_t<3, wp::float32> adj_3 = {};
        wp::float32 adj_4 = {};
        wp::mesh_query_point_t adj_5 = {};
        wp::float32 adj_6 = {};
        bool adj_7 = {};
        bool adj_8 = {};
        bool adj_9 = {};
        wp::int32 adj_10 = {};
        wp::float32 adj_11 = {};
        wp::float32 adj_12 = {};
        wp::vec_t<3, wp::float32> adj_13 = {};
        wp::int32 adj_14 = {};
        wp::float32 adj_15 = {};
        wp::float32 adj_16 = {};
        wp::int32 adj_17 = {};
        wp::vec_t<3, wp::float32> adj_18 = {};
        wp::int32 adj_19 = {};
        wp::vec_t<3, wp::float32> adj_20 = {};
        wp::float32 adj_21 = {};
        wp::float32 adj_22 = {};
        bool adj_23 = {};
        wp::float32 adj_24 = {};
        wp::float32 adj_25 = {};
        wp::float32 adj_26 = {};
        wp::float32 adj_27 = {};
        wp::float32 adj_28 = {};
        wp::int32 adj_29 = {};
        wp::float32 adj_30 = {};
        wp::float32 adj_31 = {};
        wp::float32 adj_32 = {};
        wp::vec_t<3, wp::float32> adj_33 = {};
        wp::vec_t<3, wp::float32> adj_34 = {};
        wp::float32 adj_35 = {};
        wp::float32 adj_36 = {};
        wp::float32 adj_37 = {};
        wp::vec_t<3, wp::float32> adj_38 = {};
        wp::int32 adj_39 = {};
        wp::int32 adj_40 = {};
        //---------
        // forward
        // def collide_mesh(                                                                      <L 31>
        // i = wp.tid()                                                                           <L 50>
        var_0 = builtin_tid1d();
        // p = x[i]                                                                               <L 51>
        var_1 = wp::address(var_x, var_0);
        var_3 = wp::load(var_1);
        var_2 = wp::copy(var_3);
        // query = wp.mesh_query_point_no_sign(mesh, p, params.max_query_dist)                    <L 52>
        var_4 = &((var_params).max_query_dist);
        var_6 = wp::load(var_4);
        var_5 = wp::mesh_query_point_no_sign(var_mesh, var_2, var_6);
        // if not query.result:                                                                   <L 53>
        var_7 = &((var_5).result);
        var_9 = wp::load(var_7);
        var_8 = wp::unot(var_9);
        if (var_8) {
            // return                                                                             <L 54>
            goto label0;
        }
        // closest = wp.mesh_eval_position(mesh, query.face, query.u, query.v)                    <L 55>
        var_10 = &((var_5).face);
        var_11 = &((var_5).u);
        var_12 = &((var_5).v);
        var_14 = wp::load(var_10);
        var_15 = wp::load(var_11);
        var_16 = wp::load(var_12);
        var_13 = wp::mesh_eval_position(var_mesh, var_14, var_15, var_16);
        // face_normal = wp.mesh_eval_face_normal(mesh, query.face)                               <L 56>
        var_17 = &((var_5).face);
        var_19 = wp::load(var_17);
        var_18 = wp::mesh_eval_face_normal(var_mesh, var_19);
        // height = wp.dot(p - closest, face_normal)                                              <L 58>
        var_20 = wp::sub(var_2, var_13);
        var_21 = wp::dot(var_20, var_18);
        // if height >= params.radius:                                                            <L 59>
        var_22 = &((var_params).radius);
        var_24 = wp::load(var_22);
        var_23 = (var_21 >= var_24);
        if (var_23) {
            // return                                                                             <L 60>
            goto label1;
        }
        // x[i] = p + wp.vec3(0.0, (params.radius - height) / face_normal[1], 0.0)                <L 61>
        var_26 = &((var_params).radius);
        var_28 = wp::load(var_26);
        var_27 = wp::sub(var_28, var_21);
        var_30 = wp::extract(var_18, var_29);
        var_31 = wp::div(var_27, var_30);
        var_33 = wp::vec_t<3, wp::float32>(var_25, var_31, var_32);
        var_34 = wp::add(var_2, var_33);
        // wp::array_store(var_x, var_0, var_34);
        // v[i] = wp.vec3(0.0, 0.0, 0.0)                                                          <L 62>
        var_38 = wp::vec_t<3, wp::float32>(var_35, var_36, var_37);
        // wp::array_store(var_v, var_0, var_38);
        // wp.atomic_add(contacts, step, 1)                                                       <L 63>
        // var_40 = wp::atomic_add(var_contacts, var_step, var_39);
        //---------
        // reverse
        wp::adj_atomic_add(var_contacts, var_step, var_39, adj_contacts, adj_step, adj_39, adj_40);
        // adj: wp.atomic_add(contacts, step, 1)                                                  <L 63>
        wp::adj_array_store(var_v, var_0, var_38, adj_v, adj_0, adj_38);
        wp::adj_vec_t(var_35, var_36, var_37, adj_35, adj_36, adj_37, adj_38);
        // adj: v[i] = wp.vec3(0.0, 0.0, 0.0)                                                     <L 62>
        wp::adj_array_store(var_x, var_0, var_34, adj_x, adj_0, adj_34);
        wp::adj_add(var_2, var_33, adj_2, adj_33, adj_34);
        wp::adj_vec_t(var_25, var_31, var_32, adj_25, adj_31, adj_32, adj_33);
        wp::adj_div(var_27, var_30, var_31, adj_27, adj_30, adj_31);
        wp::adj_extract(var_18, var_29, adj_18, adj_29, adj_30);
        wp::adj_sub(var_28, var_21, adj_26, adj_21, adj_27);
        adj_params.radius += adj_26;
        // adj: x[i] = p + wp.vec3(0.0, (params.radius - height) / face_normal[1], 0.0)           <L 61>
        if (var_23) {
            label1:;
            // adj: return                                                                        <L 60>
        }
        adj_params.radius += adj_22;
        // adj: if height >= params.radius:                                                       <L 59>
        wp::adj_dot(var_20, var_18, adj_20, adj_18, adj_21);
        wp::adj_sub(var_2, var_13, adj_2, adj_13, adj_20);
        // adj: height = wp.dot(p - closest, face_normal)                                         <L 58>
        adj_5.face = adj_17;
        // adj: face_normal = wp.mesh_eval_face_normal(mesh, query.face)                          <L 56>
        wp::adj_mesh_eval_position(var_mesh, var_14, var_15, var_16, adj_mesh, adj_10, adj_11, adj_12, adj_13);
        adj_5.v += adj_12;
        adj_5.u += adj_11;
        adj_5.face = adj_10;
        // adj: closest = wp.mesh_eval_position(mesh, query.face, query.u, query.v)               <L 55>
        if (var_8) {
            label0:;
            // adj: return                                                                        <L 54>
        }
        adj_5.result = adj_7;
        // adj: if not query.result:                                                              <L 53>
        wp::adj_mesh_query_point_no_sign(var_mesh, var_2, var_6, var_5, adj_mesh, adj_2, adj_4, adj_5);
        adj_params.max_query_dist += adj_4;
        // adj: query = wp.mesh_query_point_no_sign(mesh, p, params.max_query_dist)               <L 52>
        wp::adj_copy(var_3, adj_1, adj_2);
        wp::adj_address(var_x, var_0, adj_x, adj_0, adj_1);
        // adj: p = x[i]                                                                          <L 51>
        // adj: i = wp.tid()                                                                      <L 50>
        // adj: def collide_mesh(                                                                 <L 31>
        continue;
    }
}

