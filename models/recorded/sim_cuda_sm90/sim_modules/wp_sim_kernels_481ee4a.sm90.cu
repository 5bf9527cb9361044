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


struct SimParams_617ca891
{
    wp::vec_t<3, wp::float32> gravity;
    wp::float32 dt;
    wp::float32 damping;
    wp::float32 restitution;
    wp::float32 friction;
    wp::float32 radius;
    wp::float32 max_query_dist;


    SimParams_617ca891() = default;
    CUDA_CALLABLE SimParams_617ca891(wp::vec_t<3, wp::float32> const& gravity,
    wp::float32 const& dt = {},
    wp::float32 const& damping = {},
    wp::float32 const& restitution = {},
    wp::float32 const& friction = {},
    wp::float32 const& radius = {},
    wp::float32 const& max_query_dist = {})
        : gravity{gravity}
        , dt{dt}
        , damping{damping}
        , restitution{restitution}
        , friction{friction}
        , radius{radius}
        , max_query_dist{max_query_dist}

    {
    }

    CUDA_CALLABLE SimParams_617ca891& operator += (const SimParams_617ca891& rhs)
    {    gravity += rhs.gravity;
    dt += rhs.dt;
    damping += rhs.damping;
    restitution += rhs.restitution;
    friction += rhs.friction;
    radius += rhs.radius;
    max_query_dist += rhs.max_query_dist;

        return *this;}

};

static CUDA_CALLABLE void adj_SimParams_617ca891(wp::vec_t<3, wp::float32> const&,
    wp::float32 const&,
    wp::float32 const&,
    wp::float32 const&,
    wp::float32 const&,
    wp::float32 const&,
    wp::float32 const&,
    wp::vec_t<3, wp::float32> & adj_gravity,
    wp::float32 & adj_dt,
    wp::float32 & adj_damping,
    wp::float32 & adj_restitution,
    wp::float32 & adj_friction,
    wp::float32 & adj_radius,
    wp::float32 & adj_max_query_dist,
    SimParams_617ca891 & adj_ret)
{
    adj_gravity += adj_ret.gravity;
    adj_dt += adj_ret.dt;
    adj_damping += adj_ret.damping;
    adj_restitution += adj_ret.restitution;
    adj_friction += adj_ret.friction;
    adj_radius += adj_ret.radius;
    adj_max_query_dist += adj_ret.max_query_dist;
}

// Required when compiling adjoints.
CUDA_CALLABLE SimParams_617ca891 add(const SimParams_617ca891& a, const SimParams_617ca891& b)
{
    return SimParams_617ca891();
}

CUDA_CALLABLE void adj_atomic_add(SimParams_617ca891* p, SimParams_617ca891 t)
{
    wp::adj_atomic_add(&p->gravity, t.gravity);
    wp::adj_atomic_add(&p->dt, t.dt);
    wp::adj_atomic_add(&p->damping, t.damping);
    wp::adj_atomic_add(&p->restitution, t.restitution);
    wp::adj_atomic_add(&p->friction, t.friction);
    wp::adj_atomic_add(&p->radius, t.radius);
    wp::adj_atomic_add(&p->max_query_dist, t.max_query_dist);
}





extern "C" __global__ void integrate_6634f7f5_cuda_kernel_forward(
    wp::launch_bounds_t<1> dim,
    wp::array_t<wp::vec_t<3, wp::float32>> var_x,
    wp::array_t<wp::vec_t<3, wp::float32>> var_v,
    SimParams_617ca891 var_params)
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
        // def integrate(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), params: SimParams):       <L 24>
        // i = wp.tid()                                                                           <L 26>
        var_0 = builtin_tid1d();
        // vel = (v[i] + params.gravity * params.dt) * params.damping                             <L 27>
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
        // v[i] = vel                                                                             <L 28>
        wp::array_store(var_v, var_0, var_10);
        // x[i] = x[i] + vel * params.dt                                                          <L 29>
        var_12 = wp::address(var_x, var_0);
        var_13 = &((var_params).dt);
        var_15 = wp::load(var_13);
        var_14 = wp::mul(var_10, var_15);
        var_17 = wp::load(var_12);
        var_16 = wp::add(var_17, var_14);
        wp::array_store(var_x, var_0, var_16);
    }
}



extern "C" __global__ void integrate_6634f7f5_cuda_kernel_backward(
    wp::launch_bounds_t<1> dim,
    wp::array_t<wp::vec_t<3, wp::float32>> var_x,
    wp::array_t<wp::vec_t<3, wp::float32>> var_v,
    SimParams_617ca891 var_params,
    wp::array_t<wp::vec_t<3, wp::float32>> adj_x,
    wp::array_t<wp::vec_t<3, wp::float32>> adj_v,
    SimParams_617ca891 adj_params)
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
        // def integrate(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), params: SimParams):       <L 24>
        // i = wp.tid()                                                                           <L 26>
        var_0 = builtin_tid1d();
        // vel = (v[i] + params.gravity * params.dt) * params.damping                             <L 27>
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
        // v[i] = vel                                                                             <L 28>
        // wp::array_store(var_v, var_0, var_10);
        // x[i] = x[i] + vel * params.dt                                                          <L 29>
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
        // adj: x[i] = x[i] + vel * params.dt                                                     <L 29>
        wp::adj_array_store(var_v, var_0, var_10, adj_v, adj_0, adj_10);
        // adj: v[i] = vel                                                                        <L 28>
        wp::adj_mul(var_7, var_11, adj_7, adj_9, adj_10);
        adj_params.damping += adj_9;
        wp::adj_add(var_8, var_4, adj_1, adj_4, adj_7);
        wp::adj_mul(var_5, var_6, adj_2, adj_3, adj_4);
        adj_params.dt += adj_3;
        adj_params.gravity += adj_2;
        wp::adj_address(var_v, var_0, adj_v, adj_0, adj_1);
        // adj: vel = (v[i] + params.gravity * params.dt) * params.damping                        <L 27>
        // adj: i = wp.tid()                                                                      <L 26>
        // adj: def integrate(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), params: SimParams):  <L 24>
        continue;
    }
}



extern "C" __global__ void collide_mesh_e384b2f0_cuda_kernel_forward(
    wp::launch_bounds_t<1> dim,
    wp::uint64 var_mesh,
    wp::array_t<wp::vec_t<3, wp::float32>> var_x,
    wp::array_t<wp::vec_t<3, wp::float32>> var_v,
    SimParams_617ca891 var_params,
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
        wp::float32 var_22;
        const wp::float32 var_23 = 0.0;
        bool var_24;
        bool var_25;
        bool var_26;
        wp::float32* var_27;
        bool var_28;
        wp::float32 var_29;
        wp::vec_t<3, wp::float32> var_30;
        bool var_31;
        bool var_32;
        const wp::float32 var_33 = 1e-06;
        bool var_34;
        wp::vec_t<3, wp::float32> var_35;
        wp::vec_t<3, wp::float32> var_36;
        wp::float32* var_37;
        wp::vec_t<3, wp::float32> var_38;
        wp::float32 var_39;
        wp::vec_t<3, wp::float32> var_40;
        wp::vec_t<3, wp::float32>* var_41;
        wp::vec_t<3, wp::float32> var_42;
        wp::vec_t<3, wp::float32> var_43;
        wp::float32 var_44;
        const wp::float32 var_45 = 0.0;
        bool var_46;
        wp::vec_t<3, wp::float32> var_47;
        wp::vec_t<3, wp::float32> var_48;
        const wp::float32 var_49 = 1.0;
        wp::float32* var_50;
        wp::float32 var_51;
        wp::float32 var_52;
        wp::vec_t<3, wp::float32> var_53;
        wp::float32* var_54;
        wp::vec_t<3, wp::float32> var_55;
        wp::float32 var_56;
        wp::vec_t<3, wp::float32> var_57;
        const wp::int32 var_58 = 1;
        wp::int32 var_59;
        //---------
        // forward
        // def collide_mesh(                                                                      <L 33>
        // i = wp.tid()                                                                           <L 48>
        var_0 = builtin_tid1d();
        // p = x[i]                                                                               <L 49>
        var_1 = wp::address(var_x, var_0);
        var_3 = wp::load(var_1);
        var_2 = wp::copy(var_3);
        // query = wp.mesh_query_point_no_sign(mesh, p, params.max_query_dist)                    <L 50>
        var_4 = &((var_params).max_query_dist);
        var_6 = wp::load(var_4);
        var_5 = wp::mesh_query_point_no_sign(var_mesh, var_2, var_6);
        // if not query.result:                                                                   <L 51>
        var_7 = &((var_5).result);
        var_9 = wp::load(var_7);
        var_8 = wp::unot(var_9);
        if (var_8) {
            // return                                                                             <L 52>
            continue;
        }
        // closest = wp.mesh_eval_position(mesh, query.face, query.u, query.v)                    <L 53>
        var_10 = &((var_5).face);
        var_11 = &((var_5).u);
        var_12 = &((var_5).v);
        var_14 = wp::load(var_10);
        var_15 = wp::load(var_11);
        var_16 = wp::load(var_12);
        var_13 = wp::mesh_eval_position(var_mesh, var_14, var_15, var_16);
        // face_normal = wp.mesh_eval_face_normal(mesh, query.face)                               <L 54>
        var_17 = &((var_5).face);
        var_19 = wp::load(var_17);
        var_18 = wp::mesh_eval_face_normal(var_mesh, var_19);
        // delta = p - closest                                                                    <L 55>
        var_20 = wp::sub(var_2, var_13);
        // dist = wp.length(delta)                                                                <L 56>
        var_21 = wp::length(var_20);
        // below = wp.dot(delta, face_normal) < 0.0                                               <L 59>
        var_22 = wp::dot(var_20, var_18);
        var_24 = (var_22 < var_23);
        // if not below and dist >= params.radius:                                                <L 60>
        var_26 = wp::unot(var_24);
        var_25 = var_26;
        if (var_25) {
            var_27 = &((var_params).radius);
            var_29 = wp::load(var_27);
            var_28 = (var_21 >= var_29);
            var_25 = var_25 && var_28;
        }
        if (var_25) {
            // return                                                                             <L 61>
            continue;
        }
        // n = face_normal                                                                        <L 62>
        var_30 = wp::copy(var_18);
        // if not below and dist > 1.0e-6:                                                        <L 63>
        var_32 = wp::unot(var_24);
        var_31 = var_32;
        if (var_31) {
            var_34 = (var_21 > var_33);
            var_31 = var_31 && var_34;
        }
        if (var_31) {
            // n = delta / dist                                                                   <L 64>
            var_35 = wp::div(var_20, var_21);
        }
        var_36 = wp::where(var_31, var_35, var_30);
        // x[i] = closest + n * params.radius                                                     <L 65>
        var_37 = &((var_params).radius);
        var_39 = wp::load(var_37);
        var_38 = wp::mul(var_36, var_39);
        var_40 = wp::add(var_13, var_38);
        wp::array_store(var_x, var_0, var_40);
        // vel = v[i]                                                                             <L 66>
        var_41 = wp::address(var_v, var_0);
        var_43 = wp::load(var_41);
        var_42 = wp::copy(var_43);
        // vn = wp.dot(vel, n)                                                                    <L 67>
        var_44 = wp::dot(var_42, var_36);
        // if vn < 0.0:                                                                           <L 68>
        var_46 = (var_44 < var_45);
        if (var_46) {
            // v_normal = n * vn                                                                  <L 69>
            var_47 = wp::mul(var_36, var_44);
            // v_tangent = (vel - v_normal) * (1.0 - params.friction)                             <L 70>
            var_48 = wp::sub(var_42, var_47);
            var_50 = &((var_params).friction);
            var_52 = wp::load(var_50);
            var_51 = wp::sub(var_49, var_52);
            var_53 = wp::mul(var_48, var_51);
            // v[i] = v_tangent - v_normal * params.restitution                                   <L 71>
            var_54 = &((var_params).restitution);
            var_56 = wp::load(var_54);
            var_55 = wp::mul(var_47, var_56);
            var_57 = wp::sub(var_53, var_55);
            wp::array_store(var_v, var_0, var_57);
        }
        // wp.atomic_add(contacts, step, 1)                                                       <L 72>
        var_59 = wp::atomic_add(var_contacts, var_step, var_58);
    }
}



extern "C" __global__ void collide_mesh_e384b2f0_cuda_kernel_backward(
    wp::launch_bounds_t<1> dim,
    wp::uint64 var_mesh,
    wp::array_t<wp::vec_t<3, wp::float32>> var_x,
    wp::array_t<wp::vec_t<3, wp::float32>> var_v,
    SimParams_617ca891 var_params,
    wp::array_t<wp::int32> var_contacts,
    wp::int32 var_step,
    wp::uint64 adj_mesh,
    wp::array_t<wp::vec_t<3, wp::float32>> adj_x,
    wp::array_t<wp::vec_t<3, wp::float32>> adj_v,
    SimParams_617ca891 adj_params,
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
        wp::float32 var_22;
        const wp::float32 var_23 = 0.0;
        bool var_24;
        bool var_25;
        bool var_26;
        wp::float32* var_27;
        bool var_28;
        wp::float32 var_29;
        wp::vec_t<3, wp::float32> var_30;
        bool var_31;
        bool var_32;
        const wp::float32 var_33 = 1e-06;
        bool var_34;
        wp::vec_t<3, wp::float32> var_35;
        wp::vec_t<3, wp::float32> var_36;
        wp::float32* var_37;
        wp::vec_t<3, wp::float32> var_38;
        wp::float32 var_39;
        wp::vec_t<3, wp::float32> var_40;
        wp::vec_t<3, wp::float32>* var_41;
        wp::vec_t<3, wp::float32> var_42;
        wp::vec_t<3, wp::float32> var_43;
        wp::float32 var_44;
        const wp::float32 var_45 = 0.0;
        bool var_46;
        wp::vec_t<3, wp::float32> var_47;
        wp::vec_t<3, wp::float32> var_48;
        const wp::float32 var_49 = 1.0;
        wp::float32* var_50;
        wp::float32 var_51;
        wp::float32 var_52;
        wp::vec_t<3, wp::float32> var_53;
        wp::float32* var_54;
        wp::vec_t<3, wp::float32> var_55;
        wp::float32 var_56;
        wp::vec_t<3, wp::float32> var_57;
        const wp::int32 var_58 = 1;
        wp::int32 var_59;
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
        wp::float32 adj_23 = {};
        bool adj_24 = {};
        bool adj_25 = {};
        bool adj_26 = {};
        wp::float32 adj_27 = {};
        bool adj_28 = {};
        wp::float32 adj_29 = {};
        wp::vec_t<3, wp::float32> adj_30 = {};
        bool adj_31 = {};
        bool adj_32 = {};
        wp::float32 adj_33 = {};
        bool adj_34 = {};
        wp::vec_t<3, wp::float32> adj_35 = {};
        wp::vec_t<3, wp::float32> adj_36 = {};
        wp::float32 adj_37 = {};
        wp::vec_t<3, wp::float32> adj_38 = {};
        wp::float32 adj_39 = {};
        wp::vec_t<3, wp::float32> adj_40 = {};
        wp::vec_t<3, wp::float32> adj_41 = {};
        wp::vec_t<3, wp::float32> adj_42 = {};
        wp::vec_t<3, wp::float32> adj_43 = {};
        wp::float32 adj_44 = {};
        wp::float32 adj_45 = {};
        bool adj_46 = {};
        wp::vec_t<3, wp::float32> adj_47 = {};
        wp::vec_t<3, wp::float32> adj_48 = {};
        wp::float32 adj_49 = {};
        wp::float32 adj_50 = {};
        wp::float32 adj_51 = {};
        wp::float32 adj_52 = {};
        wp::vec_t<3, wp::float32> adj_53 = {};
        wp::float32 adj_54 = {};
        wp::vec_t<3, wp::float32> adj_55 = {};
        wp::float32 adj_56 = {};
        wp::vec_t<3, wp::float32> adj_57 = {};
        wp::int32 adj_58 = {};
        wp::int32 adj_59 = {};
        //---------
        // forward
        // def collide_mesh(                                                                      <L 33>
        // i = wp.tid()                                                                           <L 48>
        var_0 = builtin_tid1d();
        // p = x[i]                                                                               <L 49>
        var_1 = wp::address(var_x, var_0);
        var_3 = wp::load(var_1);
        var_2 = wp::copy(var_3);
        // query = wp.mesh_query_point_no_sign(mesh, p, params.max_query_dist)                    <L 50>
        var_4 = &((var_params).max_query_dist);
        var_6 = wp::load(var_4);
        var_5 = wp::mesh_query_point_no_sign(var_mesh, var_2, var_6);
        // if not query.result:                                                                   <L 51>
        var_7 = &((var_5).result);
        var_9 = wp::load(var_7);
        var_8 = wp::unot(var_9);
        if (var_8) {
            // return                                                                             <L 52>
            goto label0;
        }
        // closest = wp.mesh_eval_position(mesh, query.face, query.u, query.v)                    <L 53>
        var_10 = &((var_5).face);
        var_11 = &((var_5).u);
        var_12 = &((var_5).v);
        var_14 = wp::load(var_10);
        var_15 = wp::load(var_11);
        var_16 = wp::load(var_12);
        var_13 = wp::mesh_eval_position(var_mesh, var_14, var_15, var_16);
        // face_normal = wp.mesh_eval_face_normal(mesh, query.face)                               <L 54>
        var_17 = &((var_5).face);
        var_19 = wp::load(var_17);
        var_18 = wp::mesh_eval_face_normal(var_mesh, var_19);
        // delta = p - closest                                                                    <L 55>
        var_20 = wp::sub(var_2, var_13);
        // dist = wp.length(delta)                                                                <L 56>
        var_21 = wp::length(var_20);
        // below = wp.dot(delta, face_normal) < 0.0                                               <L 59>
        var_22 = wp::dot(var_20, var_18);
        var_24 = (var_22 < var_23);
        // if not below and dist >= params.radius:                                                <L 60>
        var_26 = wp::unot(var_24);
        var_25 = var_26;
        if (var_25) {
            var_27 = &((var_params).radius);
            var_29 = wp::load(var_27);
            var_28 = (var_21 >= var_29);
            var_25 = var_25 && var_28;
        }
        if (var_25) {
            // return                                                                             <L 61>
            goto label1;
        }
        // n = face_normal                                                                        <L 62>
        var_30 = wp::copy(var_18);
        // if not below and dist > 1.0e-6:                                                        <L 63>
        var_32 = wp::unot(var_24);
        var_31 = var_32;
        if (var_31) {
            var_34 = (var_21 > var_33);
            var_31 = var_31 && var_34;
        }
        if (var_31) {
            // n = delta / dist                                                                   <L 64>
            var_35 = wp::div(var_20, var_21);
        }
        var_36 = wp::where(var_31, var_35, var_30);
        // x[i] = closest + n * params.radius                                                     <L 65>
        var_37 = &((var_params).radius);
        var_39 = wp::load(var_37);
        var_38 = wp::mul(var_36, var_39);
        var_40 = wp::add(var_13, var_38);
        // wp::array_store(var_x, var_0, var_40);
        // vel = v[i]                                                                             <L 66>
        var_41 = wp::address(var_v, var_0);
        var_43 = wp::load(var_41);
        var_42 = wp::copy(var_43);
        // vn = wp.dot(vel, n)                                                                    <L 67>
        var_44 = wp::dot(var_42, var_36);
        // if vn < 0.0:                                                                           <L 68>
        var_46 = (var_44 < var_45);
        if (var_46) {
            // v_normal = n * vn                                                                  <L 69>
            var_47 = wp::mul(var_36, var_44);
            // v_tangent = (vel - v_normal) * (1.0 - params.friction)                             <L 70>
            var_48 = wp::sub(var_42, var_47);
            var_50 = &((var_params).friction);
            var_52 = wp::load(var_50);
            var_51 = wp::sub(var_49, var_52);
            var_53 = wp::mul(var_48, var_51);
            // v[i] = v_tangent - v_normal * params.restitution                                   <L 71>
            var_54 = &((var_params).restitution);
            var_56 = wp::load(var_54);
            var_55 = wp::mul(var_47, var_56);
            var_57 = wp::sub(var_53, var_55);
            // wp::array_store(var_v, var_0, var_57);
        }
        // wp.atomic_add(contacts, step, 1)                                                       <L 72>
        // var_59 = wp::atomic_add(var_contacts, var_step, var_58);
        //---------
        // reverse
        wp::adj_atomic_add(var_contacts, var_step, var_58, adj_contacts, adj_step, adj_58, adj_59);
        // adj: wp.atomic_add(contacts, step, 1)                                                  <L 72>
        if (var_46) {
            wp::adj_array_store(var_v, var_0, var_57, adj_v, adj_0, adj_57);
            wp::adj_sub(var_53, var_55, adj_53, adj_55, adj_57);
            wp::adj_mul(var_47, var_56, adj_47, adj_54, adj_55);
            adj_params.restitution += adj_54;
            // adj: v[i] = v_tangent - v_normal * params.restitution                              <L 71>
            wp::adj_mul(var_48, var_51, adj_48, adj_51, adj_53);
            wp::adj_sub(var_49, var_52, adj_49, adj_50, adj_51);
            adj_params.friction += adj_50;
            wp::adj_sub(var_42, var_47, adj_42, adj_47, adj_48);
            // adj: v_tangent = (vel - v_normal) * (1.0 - params.friction)                        <L 70>
            wp::adj_mul(var_36, var_44, adj_36, adj_44, adj_47);
            // adj: v_normal = n * vn                                                             <L 69>
        }
        // adj: if vn < 0.0:                                                                      <L 68>
        wp::adj_dot(var_42, var_36, adj_42, adj_36, adj_44);
        // adj: vn = wp.dot(vel, n)                                                               <L 67>
        wp::adj_copy(var_43, adj_41, adj_42);
        wp::adj_address(var_v, var_0, adj_v, adj_0, adj_41);
        // adj: vel = v[i]                                                                        <L 66>
        wp::adj_array_store(var_x, var_0, var_40, adj_x, adj_0, adj_40);
        wp::adj_add(var_13, var_38, adj_13, adj_38, adj_40);
        wp::adj_mul(var_36, var_39, adj_36, adj_37, adj_38);
        adj_params.radius += adj_37;
        // adj: x[i] = closest + n * params.radius                                                <L 65>
        wp::adj_where(var_31, var_35, var_30, adj_31, adj_35, adj_30, adj_36);
        if (var_31) {
            wp::adj_div(var_20, var_21, adj_20, adj_21, adj_35);
            // adj: n = delta / dist                                                              <L 64>
        }
        if (var_31) {
        }
        // adj: if not below and dist > 1.0e-6:                                                   <L 63>
        wp::adj_copy(var_18, adj_18, adj_30);
        // adj: n = face_normal                                                                   <L 62>
        if (var_25) {
            label1:;
            // adj: return                                                                        <L 61>
        }
        if (var_25) {
            adj_params.radius += adj_27;
        }
        // adj: if not below and dist >= params.radius:                                           <L 60>
        wp::adj_dot(var_20, var_18, adj_20, adj_18, adj_22);
        // adj: below = wp.dot(delta, face_normal) < 0.0                                          <L 59>
        wp::adj_length(var_20, var_21, adj_20, adj_21);
        // adj: dist = wp.length(delta)                                                           <L 56>
        wp::adj_sub(var_2, var_13, adj_2, adj_13, adj_20);
        // adj: delta = p - closest                                                               <L 55>
        adj_5.face = adj_17;
        // adj: face_normal = wp.mesh_eval_face_normal(mesh, query.face)                          <L 54>
        wp::adj_mesh_eval_position(var_mesh, var_14, var_15, var_16, adj_mesh, adj_10, adj_11, adj_12, adj_13);
        adj_5.v += adj_12;
        adj_5.u += adj_11;
        adj_5.face = adj_10;
        // adj: closest = wp.mesh_eval_position(mesh, query.face, query.u, query.v)               <L 53>
        if (var_8) {
            label0:;
            // adj: return                                                                        <L 52>
        }
        adj_5.result = adj_7;
        // adj: if not query.result:                                                              <L 51>
        wp::adj_mesh_query_point_no_sign(var_mesh, var_2, var_6, var_5, adj_mesh, adj_2, adj_4, adj_5);
        adj_params.max_query_dist += adj_4;
        // adj: query = wp.mesh_query_point_no_sign(mesh, p, params.max_query_dist)               <L 50>
        wp::adj_copy(var_3, adj_1, adj_2);
        wp::adj_address(var_x, var_0, adj_x, adj_0, adj_1);
        // adj: p = x[i]                                                                          <L 49>
        // adj: i = wp.tid()                                                                      <L 48>
        // adj: def collide_mesh(                                                                 <L 33>
        continue;
    }
}

