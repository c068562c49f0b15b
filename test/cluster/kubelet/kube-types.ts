/**
 * The slice of the Kubernetes core/v1 and coordination/v1 object shapes the process kubelet reads
 * and writes. Every field is optional because the API server's JSON is parsed without a schema;
 * the kubelet treats a missing field as Kubernetes would treat its default.
 */

export interface ObjectMeta {
	readonly name?: string
	readonly namespace?: string
	readonly uid?: string
	readonly resourceVersion?: string
	readonly labels?: Readonly<Record<string, string>>
	readonly annotations?: Readonly<Record<string, string>>
	readonly deletionTimestamp?: string
	readonly deletionGracePeriodSeconds?: number
	readonly finalizers?: readonly string[]
	readonly creationTimestamp?: string
}

export interface ObjectFieldSelector {
	readonly fieldPath?: string
}

export interface KeySelector {
	readonly name?: string
	readonly key?: string
	readonly optional?: boolean
}

export interface EnvVarSource {
	readonly fieldRef?: ObjectFieldSelector
	readonly resourceFieldRef?: { readonly resource?: string }
	readonly configMapKeyRef?: KeySelector
	readonly secretKeyRef?: KeySelector
}

export interface EnvVar {
	readonly name: string
	readonly value?: string
	readonly valueFrom?: EnvVarSource
}

export interface EnvFromSource {
	readonly prefix?: string
	readonly configMapRef?: { readonly name?: string; readonly optional?: boolean }
	readonly secretRef?: { readonly name?: string; readonly optional?: boolean }
}

export interface Capabilities {
	readonly add?: readonly string[]
	readonly drop?: readonly string[]
}

export interface SecurityContext {
	readonly runAsUser?: number
	readonly runAsGroup?: number
	readonly runAsNonRoot?: boolean
	readonly allowPrivilegeEscalation?: boolean
	readonly privileged?: boolean
	readonly readOnlyRootFilesystem?: boolean
	readonly capabilities?: Capabilities
}

export interface PodSecurityContext {
	readonly runAsUser?: number
	readonly runAsGroup?: number
	readonly runAsNonRoot?: boolean
	readonly supplementalGroups?: readonly number[]
	readonly fsGroup?: number
}

export interface ExecAction {
	readonly command?: readonly string[]
}

export interface ContainerPort {
	readonly containerPort: number
	readonly name?: string
	readonly protocol?: string
}

export interface VolumeMount {
	readonly name: string
	readonly mountPath: string
	readonly readOnly?: boolean
	readonly subPath?: string
}

export interface VolumeDevice {
	readonly name: string
	readonly devicePath: string
}

export interface Container {
	readonly name: string
	readonly image?: string
	readonly command?: readonly string[]
	readonly args?: readonly string[]
	readonly workingDir?: string
	readonly env?: readonly EnvVar[]
	readonly envFrom?: readonly EnvFromSource[]
	readonly ports?: readonly ContainerPort[]
	readonly volumeMounts?: readonly VolumeMount[]
	readonly volumeDevices?: readonly VolumeDevice[]
	readonly securityContext?: SecurityContext
	readonly lifecycle?: { readonly preStop?: { readonly exec?: ExecAction } }
}

export interface Volume {
	readonly name: string
	readonly persistentVolumeClaim?: { readonly claimName: string; readonly readOnly?: boolean }
	readonly emptyDir?: Readonly<Record<string, unknown>>
}

export interface PodSpec {
	readonly nodeName?: string
	readonly hostname?: string
	readonly serviceAccountName?: string
	readonly restartPolicy?: 'Always' | 'OnFailure' | 'Never'
	readonly terminationGracePeriodSeconds?: number
	readonly containers: readonly Container[]
	readonly initContainers?: readonly Container[]
	readonly volumes?: readonly Volume[]
	readonly securityContext?: PodSecurityContext
}

export interface PodCondition {
	readonly type: string
	readonly status: 'True' | 'False' | 'Unknown'
	readonly reason?: string
	readonly message?: string
	readonly lastProbeTime?: string | null
	readonly lastTransitionTime?: string
}

export interface ContainerStateWaiting {
	readonly reason?: string
	readonly message?: string
}

export interface ContainerStateRunning {
	readonly startedAt?: string
}

export interface ContainerStateTerminated {
	readonly exitCode: number
	readonly signal?: number
	readonly reason?: string
	readonly message?: string
	readonly startedAt?: string
	readonly finishedAt?: string
	readonly containerID?: string
}

export interface ContainerState {
	readonly waiting?: ContainerStateWaiting
	readonly running?: ContainerStateRunning
	readonly terminated?: ContainerStateTerminated
}

export interface ContainerStatus {
	readonly name: string
	readonly image: string
	readonly imageID: string
	readonly containerID?: string
	readonly ready: boolean
	readonly started: boolean
	readonly restartCount: number
	readonly state: ContainerState
	readonly lastState: ContainerState
}

export interface PodStatus {
	readonly phase?: 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Unknown'
	readonly conditions?: readonly PodCondition[]
	readonly podIP?: string
	readonly podIPs?: readonly { readonly ip: string }[]
	readonly hostIP?: string
	readonly hostIPs?: readonly { readonly ip: string }[]
	readonly startTime?: string
	readonly containerStatuses?: readonly ContainerStatus[]
	readonly message?: string
	readonly reason?: string
}

export interface Pod {
	readonly apiVersion?: string
	readonly kind?: string
	readonly metadata: ObjectMeta
	readonly spec: PodSpec
	readonly status?: PodStatus
}

export interface PersistentVolumeClaim {
	readonly metadata: ObjectMeta
	readonly spec?: {
		readonly accessModes?: readonly string[]
		readonly volumeMode?: string
		readonly volumeName?: string
		readonly resources?: { readonly requests?: Readonly<Record<string, string>> }
	}
	readonly status?: { readonly phase?: string }
}

export interface ObjectList<T> {
	readonly metadata?: { readonly resourceVersion?: string }
	readonly items: readonly T[]
}

/** `namespace/name`, the key a pod or claim is addressed by in faults and logs. */
export interface ObjectRef {
	readonly namespace: string
	readonly name: string
}

export function refKey(ref: ObjectRef): string {
	return `${ref.namespace}/${ref.name}`
}

/** The API path of the pod `ref` names. */
export function podPath(ref: ObjectRef): string {
	return `/api/v1/namespaces/${ref.namespace}/pods/${ref.name}`
}
